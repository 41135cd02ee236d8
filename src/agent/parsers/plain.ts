import type { LogEvent, Parser, ParserSpec } from './parser.js';

/** The line as it is, in `message`. */
export class PlainParser implements Parser {
  parse(line: string): LogEvent {
    return { message: line };
  }
}

export const plainParser: ParserSpec = {
  type: 'plain',
  summary: 'the line as it is, in `message`',
  options: {},
  configure: () => undefined,
  create: () => new PlainParser(),
};
