import type { LogEvent, Parser, ParserSpec } from './parser.js';

/**
 * logfmt: `key=value key="quoted value" flag`. Values stay strings (the service types them); a bare key is
 * true. Text that is not key=value is kept: a line with no pair at all becomes `{message}`.
 */
export class LogfmtParser implements Parser {
  parse(line: string): LogEvent {
    const out: LogEvent = {};
    let pairs = 0;
    let i = 0;
    const n = line.length;
    while (i < n) {
      while (i < n && line[i] === ' ') i++;
      const keyStart = i;
      while (i < n && line[i] !== '=' && line[i] !== ' ' && line[i] !== '"') i++;
      const key = line.slice(keyStart, i);
      if (!key) {
        // a stray quote or '=': skip the character so the scan always moves on
        i++;
        continue;
      }
      if (line[i] !== '=') {
        out[key] = true;
        pairs++;
        continue;
      }
      i++;
      let value = '';
      if (line[i] === '"') {
        i++;
        while (i < n && line[i] !== '"') {
          if (line[i] === '\\' && i + 1 < n) {
            const e = line[i + 1]!;
            value += e === 'n' ? '\n' : e === 't' ? '\t' : e;
            i += 2;
          } else value += line[i++];
        }
        i++; // closing quote
      } else {
        const start = i;
        while (i < n && line[i] !== ' ') i++;
        value = line.slice(start, i);
      }
      out[key] = value;
      pairs++;
    }
    return pairs > 0 ? out : { message: line };
  }
}

export const logfmtParser: ParserSpec = {
  type: 'logfmt',
  summary: '`key=value key="quoted value" flag`; values stay strings',
  options: {},
  configure: () => undefined,
  create: () => new LogfmtParser(),
};
