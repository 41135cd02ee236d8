import { isFlatJsonObject } from '../../util/flat-json.js';
import type { LogEvent, Parser, ParserSpec } from './parser.js';

/** One JSON object per line. A line that is not a JSON object is kept whole, as `{message}`. */
export class JsonParser implements Parser {
  parse(line: string): LogEvent {
    const t = line.trimStart();
    if (t.startsWith('{')) {
      try {
        const v: unknown = JSON.parse(line);
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as LogEvent;
      } catch {
        // not JSON: kept as a message below
      }
    }
    return { message: line };
  }

  objectText(line: string): boolean {
    return isFlatJsonObject(line);
  }
}

export const jsonParser: ParserSpec = {
  type: 'json',
  summary: 'one JSON object per line; a line that is not a JSON object becomes `{message}`',
  options: {},
  keepsText: true,
  configure: () => undefined,
  create: () => new JsonParser(),
};
