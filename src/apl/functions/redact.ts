/**
 * redact's masking, in JavaScript: DuckDB's regexp_replace cannot size a replacement to each match or
 * mask only capture groups. The store registers redactText as the SQL function ferry_redact (the
 * binder checks the patterns first, so a bad one is a 400 with its position). Patterns are RE2 as
 * elsewhere in APL; the RE2 features JavaScript lacks (a leading (?i) flag group) are translated.
 */
import { createHash } from 'node:crypto';

export interface RedactOptions {
  patterns: string[];
  token: string;
  hash: boolean;
  groups: boolean;
}

/** An RE2 pattern as a global JavaScript RegExp (with match indices when groups are redacted). */
function toRegExp(pattern: string, groups: boolean): RegExp {
  let source = pattern;
  let flags = groups ? 'gd' : 'g';
  const lead = /^\(\?([imsU]+)\)/.exec(source);
  if (lead) {
    source = source.slice(lead[0].length);
    for (const f of lead[1]!) if (f === 'i' || f === 'm' || f === 's') flags += f;
  }
  return new RegExp(source.replace(/\(\?P</g, '(?<'), flags);
}

/** Why a pattern cannot be used, or undefined. */
export function redactRegexProblem(pattern: string): string | undefined {
  try {
    toRegExp(pattern, true);
    return undefined;
  } catch (e) {
    return `the pattern ${JSON.stringify(pattern)} is not a regular expression (${(e as Error).message})`;
  }
}

function mask(text: string, o: RedactOptions): string {
  return o.hash ? createHash('md5').update(text).digest('hex') : o.token.repeat([...text].length);
}

/** The text with every match of every pattern masked (or only their capture groups). */
export function redactText(text: string, o: RedactOptions): string {
  let out = text;
  for (const pattern of o.patterns) {
    const re = toRegExp(pattern, o.groups);
    if (!o.groups) {
      out = out.replace(re, (m) => (m === '' ? m : mask(m, o)));
      continue;
    }
    let result = '';
    let at = 0;
    for (const m of out.matchAll(re)) {
      const spans = (m.indices ?? []).slice(1).filter((s): s is [number, number] => s !== undefined);
      for (const [start, end] of spans.sort((a, b) => a[0] - b[0])) {
        if (start < at) continue;
        result += out.slice(at, start) + mask(out.slice(start, end), o);
        at = end;
      }
    }
    out = result + out.slice(at);
  }
  return out;
}
