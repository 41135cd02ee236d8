import type { LogEvent, Parser } from './parser.js';

/** The line as it is, in `message`. */
export class PlainParser implements Parser {
  parse(line: string): LogEvent {
    return { message: line };
  }
}
