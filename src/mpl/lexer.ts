/**
 * MPL's tokens (reference metrics.md §3.1): identifiers plain or in backticks, strings in double quotes,
 * integers, floats (with a decimal point), durations (`5m`), RFC 3339 times, regexes (`#/…/`), parameters
 * (`$name`), and punctuation. Keywords are identifiers the parser reads by their text; one in backticks is a
 * name, never a keyword. `//` starts a comment to the end of the line.
 */
import { skipBlank } from '../util/source-text.js';
import { MplError } from './errors.js';

export type TokenKind =
  'ident' | 'quoted' | 'string' | 'int' | 'float' | 'duration' | 'time' | 'regex' | 'param' | 'punct' | 'error' | 'eof';

export interface Token {
  kind: TokenKind;
  /** The identifier, string or regex as written after escapes; the punctuation; the number's text. */
  text: string;
  /** Offset of the token's first character. */
  pos: number;
  /** A duration in seconds. */
  seconds?: number;
}

/** Seconds per duration unit (`M` is 30 days, `y` 365). */
export const DURATION_UNITS: Record<string, number> = {
  ms: 0.001,
  s: 1,
  m: 60,
  h: 3600,
  d: 86_400,
  w: 604_800,
  M: 2_592_000,
  y: 31_536_000,
};

const PUNCT = [
  '..',
  '::',
  '==',
  '!=',
  '<=',
  '>=',
  '|',
  ':',
  '[',
  ']',
  '(',
  ')',
  ',',
  ';',
  '=',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '{',
  '}',
];
const ESCAPES: Record<string, string> = {
  '"': '"',
  '`': '`',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  $: '$',
};
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/;

const isIdentStart = (c: string) => /[A-Za-z_]/.test(c);
const isIdentPart = (c: string) => /[A-Za-z0-9_]/.test(c);
const isDigit = (c: string) => c >= '0' && c <= '9';

export function lex(source: string): Token[] {
  const tokens: Token[] = [];
  try {
    lexInto(source, tokens);
  } catch (e) {
    if (!(e instanceof MplError)) throw e;
    tokens.push({ kind: 'error', text: e.reason, pos: e.offset });
  }
  tokens.push({ kind: 'eof', text: '', pos: source.length });
  return tokens;
}

function lexInto(source: string, tokens: Token[]): void {
  let i = 0;
  const fail = (reason: string, at = i): never => {
    throw new MplError(reason, source, at);
  };
  /** The text of a quoted token up to `close`, with its escapes. */
  const quoted = (close: string, what: string, escapes: string): string => {
    const start = i;
    i++;
    let out = '';
    for (;;) {
      if (i >= source.length || source[i] === '\n') fail(`${what} is not closed with ${close}`, start);
      const c = source[i]!;
      if (c === close) {
        i++;
        return out;
      }
      if (c === '\\') {
        const e = source[i + 1] ?? '';
        if (e === 'u') fail('unicode escape sequences are not supported', i);
        if (!escapes.includes(e)) fail(`unknown escape \\${e} in ${what}`, i);
        out += ESCAPES[e];
        i += 2;
        continue;
      }
      out += c;
      i++;
    }
  };
  while (i < source.length) {
    const c = source[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || (c === '/' && source[i + 1] === '/')) {
      i = skipBlank(source, i);
      continue;
    }
    const pos = i;
    if (isIdentStart(c)) {
      while (i < source.length && isIdentPart(source[i]!)) i++;
      tokens.push({ kind: 'ident', text: source.slice(pos, i), pos });
      continue;
    }
    if (c === '`') {
      tokens.push({ kind: 'quoted', text: quoted('`', 'a quoted identifier', '`\\/bfnrt'), pos });
      continue;
    }
    if (c === '"') {
      tokens.push({ kind: 'string', text: quoted('"', 'a string', '"\\/bfnrt$'), pos });
      continue;
    }
    if (c === "'") fail('strings are written in double quotes ("…")');
    if (c === '#' && source[i + 1] === '/') {
      i++;
      let out = '';
      const start = pos;
      i++;
      for (;;) {
        if (i >= source.length || source[i] === '\n') fail('a regex is not closed with /', start);
        const r = source[i]!;
        if (r === '/') {
          i++;
          break;
        }
        if (r === '\\' && source[i + 1] === '/') {
          out += '/';
          i += 2;
          continue;
        }
        out += r;
        i++;
      }
      tokens.push({ kind: 'regex', text: out, pos });
      continue;
    }
    if (c === '$') {
      i++;
      if (source[i] === '`') tokens.push({ kind: 'param', text: quoted('`', 'a quoted parameter', '`\\/bfnrt'), pos });
      else if (i < source.length && isIdentStart(source[i]!)) {
        const start = i;
        while (i < source.length && isIdentPart(source[i]!)) i++;
        tokens.push({ kind: 'param', text: source.slice(start, i), pos });
      } else fail('a parameter is $ and a name ($name)', pos);
      continue;
    }
    if (isDigit(c)) {
      const time = RFC3339.exec(source.slice(i, i + 40));
      if (time) {
        i += time[0].length;
        tokens.push({ kind: 'time', text: time[0], pos });
        continue;
      }
      while (i < source.length && isDigit(source[i]!)) i++;
      // A float needs its decimal point and a digit after it: `1..2` is a range, not a number.
      if (source[i] === '.' && isDigit(source[i + 1] ?? '')) {
        i++;
        while (i < source.length && isDigit(source[i]!)) i++;
        if ((source[i] === 'e' || source[i] === 'E') && /[+-]?\d/.test(source.slice(i + 1, i + 3))) {
          i++;
          if (source[i] === '+' || source[i] === '-') i++;
          while (i < source.length && isDigit(source[i]!)) i++;
        }
        tokens.push({ kind: 'float', text: source.slice(pos, i), pos });
        continue;
      }
      const digits = source.slice(pos, i);
      if (i < source.length && isIdentStart(source[i]!)) {
        const unitStart = i;
        while (i < source.length && isIdentPart(source[i]!)) i++;
        const unit = source.slice(unitStart, i);
        const per = DURATION_UNITS[unit];
        if (per === undefined)
          fail(`"${digits}${unit}" is not a number or a duration (units: ms, s, m, h, d, w, M, y)`, pos);
        tokens.push({ kind: 'duration', text: `${digits}${unit}`, pos, seconds: Number(digits) * per! });
        continue;
      }
      tokens.push({ kind: 'int', text: digits, pos });
      continue;
    }
    const p = PUNCT.find((x) => source.startsWith(x, i));
    if (!p) fail(`unexpected character "${c}"`);
    i += p!.length;
    tokens.push({ kind: 'punct', text: p!, pos });
  }
}
