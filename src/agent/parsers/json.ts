import type { LogEvent, Parser } from './parser.js';

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
}
