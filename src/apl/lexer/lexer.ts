/**
 * The APL lexer: text → tokens with source offsets. Whitespace and `//` comments separate tokens and carry
 * no meaning. Numbers with a unit suffix are timespan literals (`5m`, `1.5h`); the text inside
 * `datetime(...)` is taken raw because dates are not tokens (`datetime(2024-01-01 10:00)`).
 */
import { skipBlank } from '../../util/source-text.js';
import { AplError } from '../errors.js';
import type { Token } from './tokens.js';
import { lookupTable } from '../../util/lookup.js';

const NS = 1n;
const US = 1_000n;
const MS = 1_000_000n;
const SEC = 1_000_000_000n;
const MIN = 60n * SEC;
const HOUR = 60n * MIN;
const DAY = 24n * HOUR;

/** Timespan suffixes of the KQL grammar, plus `w` (weeks), which Axiom's docs use. */
export const TIMESPAN_UNITS: Record<string, bigint> = lookupTable({
  d: DAY,
  day: DAY,
  days: DAY,
  h: HOUR,
  hr: HOUR,
  hrs: HOUR,
  hour: HOUR,
  hours: HOUR,
  m: MIN,
  min: MIN,
  minute: MIN,
  minutes: MIN,
  s: SEC,
  sec: SEC,
  second: SEC,
  seconds: SEC,
  ms: MS,
  milli: MS,
  millis: MS,
  millisecond: MS,
  milliseconds: MS,
  micro: US,
  micros: US,
  microsecond: US,
  microseconds: US,
  nano: NS,
  nanos: NS,
  nanosecond: NS,
  nanoseconds: NS,
  tick: 100n,
  ticks: 100n,
  w: 7n * DAY,
  week: 7n * DAY,
  weeks: 7n * DAY,
});

/** Operator names written with hyphens, lexed as one identifier. */
const HYPHENATED = new Set([
  'project-away',
  'project-keep',
  'project-rename',
  'project-reorder',
  'mv-expand',
  'make-series',
  'parse-kv',
  'parse-where',
  'extend-valid',
  'granny-asc',
  'granny-desc',
]);

const PUNCT = [
  '..',
  '==',
  '!=',
  '<>',
  '<=',
  '>=',
  '=~',
  '!~',
  '|',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  ';',
  '=',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '.',
  ':',
  '!',
  '~',
  '?',
];

const isIdentStart = (c: string) => /[A-Za-z_$]/.test(c);
const isIdentPart = (c: string) => /[A-Za-z0-9_]/.test(c);
const isDigit = (c: string) => c >= '0' && c <= '9';

/** Converts a decimal number text and a unit to ns, exactly (no float rounding for `1.5h`). */
export function timespanNs(numberText: string, unit: bigint): bigint {
  const [whole, frac = ''] = numberText.split('.');
  let ns = BigInt(whole || '0') * unit;
  if (frac) ns += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
  return ns;
}

export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fail = (msg: string, at: number): never => {
    throw new AplError(msg, src, at);
  };
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || (c === '/' && src[i + 1] === '/')) {
      i = skipBlank(src, i);
      continue;
    }
    const start = i;
    // Strings: '...', "...", verbatim @'...' / @"...", and the h/H obfuscated prefix of KQL.
    if (
      c === '"' ||
      c === "'" ||
      ((c === '@' || c === 'h' || c === 'H') && (src[i + 1] === '"' || src[i + 1] === "'"))
    ) {
      const verbatim = c === '@';
      if (c !== '"' && c !== "'") i++;
      const quote = src[i]!;
      i++;
      let value = '';
      for (;;) {
        if (i >= src.length || (src[i] === '\n' && !verbatim)) fail('unterminated string literal', start);
        const ch = src[i]!;
        if (ch === quote) {
          if (verbatim && src[i + 1] === quote) {
            value += quote;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (ch === '\\' && !verbatim) {
          const e = src[i + 1];
          const simple: Record<string, string> = {
            n: '\n',
            t: '\t',
            r: '\r',
            '\\': '\\',
            '"': '"',
            "'": "'",
            '0': '\0',
            b: '\b',
            f: '\f',
          };
          if (e !== undefined && simple[e] !== undefined) {
            value += simple[e];
            i += 2;
            continue;
          }
          if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) {
            value += String.fromCharCode(parseInt(src.slice(i + 2, i + 6), 16));
            i += 6;
            continue;
          }
          // Unknown escapes keep the backslash (regex text such as "\d" written in a normal string).
          value += ch;
          i++;
          continue;
        }
        value += ch;
        i++;
      }
      tokens.push({ kind: 'string', text: src.slice(start, i), value, pos: start, end: i });
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(src[i + 1] ?? ''))) {
      if (c === '0' && (src[i + 1] === 'x' || src[i + 1] === 'X')) {
        i += 2;
        while (/[0-9a-fA-F]/.test(src[i] ?? '')) i++;
        if (i === start + 2) fail('a hexadecimal number needs digits after 0x', start);
        tokens.push({ kind: 'int', text: src.slice(start, i), value: BigInt(src.slice(start, i)), pos: start, end: i });
        continue;
      }
      while (isDigit(src[i] ?? '')) i++;
      let isReal = false;
      // A '.' followed by '.' is the range operator (1..5), not a decimal point.
      if (src[i] === '.' && src[i + 1] !== '.') {
        isReal = true;
        i++;
        while (isDigit(src[i] ?? '')) i++;
      }
      const numEnd = i;
      if ((src[i] === 'e' || src[i] === 'E') && /[+-]?\d/.test(src.slice(i + 1, i + 3))) {
        isReal = true;
        i++;
        if (src[i] === '+' || src[i] === '-') i++;
        while (isDigit(src[i] ?? '')) i++;
      }
      const numText = src.slice(start, i);
      if (isIdentStart(src[i] ?? '') && numEnd === i) {
        let j = i;
        while (isIdentPart(src[j] ?? '')) j++;
        const unit = src.slice(i, j);
        const ns = TIMESPAN_UNITS[unit];
        if (ns === undefined) fail(`unknown timespan unit "${unit}" in "${src.slice(start, j)}"`, start);
        tokens.push({
          kind: 'timespan',
          text: src.slice(start, j),
          value: timespanNs(numText, ns!),
          pos: start,
          end: j,
        });
        i = j;
        continue;
      }
      if (isIdentStart(src[i] ?? '')) fail(`unexpected character "${src[i]}" after number ${numText}`, i);
      tokens.push(
        isReal
          ? { kind: 'real', text: numText, value: Number(numText), pos: start, end: i }
          : { kind: 'int', text: numText, value: BigInt(numText), pos: start, end: i },
      );
      continue;
    }
    if (isIdentStart(c)) {
      i++; // the first character may be `$` ($left, $right), which is not an identifier part
      while (isIdentPart(src[i] ?? '')) i++;
      // Hyphenated operator names (project-away) are single keywords.
      if (src[i] === '-' && isIdentStart(src[i + 1] ?? '')) {
        let j = i + 1;
        while (isIdentPart(src[j] ?? '')) j++;
        if (HYPHENATED.has(src.slice(start, j))) i = j;
      }
      // in~ and has_any~ style suffixes: only `in~` exists.
      if (src.slice(start, i) === 'in' && src[i] === '~') i++;
      const text = src.slice(start, i);
      tokens.push({ kind: 'ident', text, pos: start, end: i });
      if (text === 'datetime' && nextNonSpace(src, i) === '(') {
        // datetime(2024-01-01 10:00:00) is not made of tokens: take everything to the closing parenthesis.
        const open = nextNonSpaceAt(src, i);
        const close = src.indexOf(')', open);
        if (close < 0) fail('datetime( has no closing parenthesis', open);
        tokens.push({ kind: 'punct', text: '(', pos: open, end: open + 1 });
        tokens.push({
          kind: 'raw',
          text: src.slice(open + 1, close),
          // Comments may stand anywhere white space may, inside the parentheses too.
          value: src
            .slice(open + 1, close)
            .replace(/\/\/[^\n]*/g, '')
            .trim(),
          pos: open + 1,
          end: close,
        });
        tokens.push({ kind: 'punct', text: ')', pos: close, end: close + 1 });
        i = close + 1;
      }
      continue;
    }
    // Negated operators (!contains, !in, !in~, !has, !startswith, !between...) are one token.
    if (c === '!' && isIdentStart(src[i + 1] ?? '') && src[i + 1] !== '$') {
      i++;
      while (isIdentPart(src[i] ?? '')) i++;
      if (src.slice(start, i) === '!in' && src[i] === '~') i++;
      tokens.push({ kind: 'ident', text: src.slice(start, i), pos: start, end: i });
      continue;
    }
    const p = PUNCT.find((op) => src.startsWith(op, i));
    if (!p) fail(`unexpected character "${c}"`, i);
    tokens.push({ kind: 'punct', text: p!, pos: i, end: i + p!.length });
    i += p!.length;
  }
  tokens.push({ kind: 'eof', text: '', pos: src.length, end: src.length });
  return tokens;
}

/** The offset of the next character that is neither white space nor in a `//` comment. */
function nextNonSpaceAt(src: string, i: number): number {
  for (;;) {
    while (i < src.length && /\s/.test(src[i]!)) i++;
    if (!src.startsWith('//', i)) return i;
    const eol = src.indexOf('\n', i);
    if (eol < 0) return src.length;
    i = eol + 1;
  }
}

function nextNonSpace(src: string, i: number): string | undefined {
  return src[nextNonSpaceAt(src, i)];
}
