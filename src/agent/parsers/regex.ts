import { str, type OptionSpecs } from '../../config/options.js';
import type { LogEvent, Parser, ParserSpec } from './parser.js';

/**
 * A regular expression with named groups (`(?<name>…)`, or RE2's `(?P<name>…)`); each group that matched
 * becomes a field. A line that does not match is kept as `{message}`.
 */
export class RegexParser implements Parser {
  private readonly re: RegExp;

  constructor(pattern: string) {
    const js = pattern.replace(/\(\?P</g, '(?<');
    try {
      this.re = new RegExp(js);
    } catch (e) {
      throw new Error(`invalid regex parser pattern: ${(e as Error).message}`);
    }
    if (!/\(\?<[A-Za-z_]/.test(js))
      throw new Error('a regex parser pattern needs named groups, such as (?<level>\\w+)');
  }

  parse(line: string): LogEvent {
    const m = this.re.exec(line);
    if (!m?.groups) return { message: line };
    const out: LogEvent = {};
    for (const [k, v] of Object.entries(m.groups)) if (v !== undefined) out[k] = v;
    return out;
  }
}

const REGEX_OPTIONS = {
  pattern: str().required().doc('the expression, with named groups (`(?<level>\\w+)` or `(?P<level>…)`)'),
} satisfies OptionSpecs;

export const regexParser: ParserSpec<string, typeof REGEX_OPTIONS> = {
  type: 'regex',
  summary: 'a regular expression with named groups (`pattern`), each group a field',
  options: REGEX_OPTIONS,
  configure({ pattern }, o) {
    try {
      new RegexParser(pattern);
    } catch (e) {
      o.fail('pattern', (e as Error).message);
    }
    return pattern;
  },
  create: (pattern) => new RegexParser(pattern),
};
