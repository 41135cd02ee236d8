/**
 * redact's masking, in JavaScript: DuckDB's regexp_replace cannot size a replacement to each match or
 * mask only capture groups. The store registers a redactor as the SQL function ferry_redact (the binder
 * checks the patterns first, so a bad one is a 400 with its position). Patterns are RE2 as elsewhere in
 * APL, matched by re2js, a port of RE2: its time is linear in the text, where a backtracking RegExp
 * given `(a+)+$` would hold the service's one thread for minutes on a short line.
 */
import { createHash } from 'node:crypto';
import { RE2JS } from 're2js';

export interface RedactOptions {
  patterns: string[];
  token: string;
  hash: boolean;
  groups: boolean;
}

/** Why a pattern cannot be used, or undefined. */
export function redactRegexProblem(pattern: string): string | undefined {
  try {
    RE2JS.compile(pattern);
    return undefined;
  } catch (e) {
    return `the pattern ${JSON.stringify(pattern)} is not a regular expression (${(e as Error).message})`;
  }
}

/**
 * Where a redaction must stop: the text may not grow past `maxChars` (each pattern masks the previous
 * one's output, so a long replacement token multiplies it), nor the work go on once `overtime()`.
 * `stop` is what is thrown then (the caller's budget error).
 */
export interface RedactLimits {
  maxChars: number;
  overtime(): boolean;
  stop(what: 'value' | 'time'): Error;
}

const NO_LIMITS: RedactLimits = { maxChars: Infinity, overtime: () => false, stop: () => new Error('unreachable') };

/** A function masking every match of every pattern in a text (or only the matches' capture groups). */
export function redactor(o: RedactOptions): (text: string, limits?: RedactLimits) => string {
  const patterns = o.patterns.map((p) => RE2JS.compile(p));
  const mask = (text: string): string =>
    o.hash ? createHash('md5').update(text).digest('hex') : o.token.repeat([...text].length);
  return (text, limits = NO_LIMITS) => {
    let out = text;
    for (const pattern of patterns) {
      const m = pattern.matcher(out);
      let result = '';
      let at = 0;
      while (m.find()) {
        const spans: [number, number][] = [];
        if (!o.groups) spans.push([m.start(), m.end()]);
        else for (let g = 1; g <= m.groupCount(); g++) if (m.start(g) >= 0) spans.push([m.start(g), m.end(g)]);
        for (const [start, end] of spans.sort((a, b) => a[0] - b[0])) {
          if (start < at || start === end) continue;
          // The mask's length is known before it is made: a text past the limit is never built.
          const masked = o.hash ? 32 : o.token.length * (end - start);
          if (result.length + (start - at) + masked + (out.length - end) > limits.maxChars) throw limits.stop('value');
          result += out.slice(at, start) + mask(out.slice(start, end));
          at = end;
        }
        if (limits.overtime()) throw limits.stop('time');
      }
      out = result + out.slice(at);
      if (limits.overtime()) throw limits.stop('time');
    }
    return out;
  };
}
