/**
 * Tells, from UTF-8 bytes and without making a value, that they hold exactly one JSON object as JSON.parse
 * reads it: the relay's verdict on most events, which it then hands on as the bytes they came as. It only
 * ever answers OBJECT for what JSON.parse takes as an object; NOT_SURE means not JSON, another value, or
 * deeper than it follows, and the caller decides with JSON.parse.
 */

/** Containers nested deeper than this are left to JSON.parse. */
const MAX_DEPTH = 512;

/** Bytes a string holds as they are: not a quote, a backslash or a control character. */
const PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 256; c++) PLAIN[c] = c === 0x22 || c === 0x5c ? 0 : 1;

/** The escapes JSON has besides \u: " \ / b f n r t. */
const ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrt') ESCAPE[c.charCodeAt(0)] = 1;

const HEX = new Uint8Array(256);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** JSON's whitespace: 1 for space and tab, 2 for the line breaks (LF, CR). */
const SPACE = new Uint8Array(256);
SPACE[0x20] = SPACE[0x09] = 1;
SPACE[0x0a] = SPACE[0x0d] = 2;

/** The index past the string whose opening quote is at `i`, or -1. */
function stringEnd(b: Uint8Array, i: number, end: number): number {
  i++;
  for (;;) {
    while (i < end && PLAIN[b[i]!] === 1) i++;
    if (i >= end) return -1;
    const c = b[i]!;
    if (c === 0x22) return i + 1;
    if (c !== 0x5c || i + 1 >= end) return -1; // a control character, or a backslash at the end
    const e = b[i + 1]!;
    if (ESCAPE[e] === 1) i += 2;
    else if (e === 0x75 && i + 5 < end && HEX[b[i + 2]!]! & HEX[b[i + 3]!]! & HEX[b[i + 4]!]! & HEX[b[i + 5]!]!) i += 6;
    else return -1;
  }
}

/** The index past the number that starts at `i`, or -1. */
function numberEnd(b: Uint8Array, i: number, end: number): number {
  if (b[i] === 0x2d) i++;
  if (i >= end) return -1;
  if (b[i] === 0x30) i++;
  else if (isDigit(b[i]!)) while (i < end && isDigit(b[i]!)) i++;
  else return -1;
  if (i < end && b[i] === 0x2e) {
    i++;
    if (i >= end || !isDigit(b[i]!)) return -1;
    while (i < end && isDigit(b[i]!)) i++;
  }
  if (i < end && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < end && (b[i] === 0x2b || b[i] === 0x2d)) i++;
    if (i >= end || !isDigit(b[i]!)) return -1;
    while (i < end && isDigit(b[i]!)) i++;
  }
  return i;
}

/** The index past the literal `word` (true, false, null) at `i`, or -1. */
function literalEnd(b: Uint8Array, i: number, end: number, word: readonly number[]): number {
  if (i + word.length > end) return -1;
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return -1;
  return i + word.length;
}

const TRUE = [...'true'].map((c) => c.charCodeAt(0));
const FALSE = [...'false'].map((c) => c.charCodeAt(0));
const NULL = [...'null'].map((c) => c.charCodeAt(0));

const IN_OBJECT = 1;
const IN_ARRAY = 2;
/** What is expected next. */
const VALUE = 0;
const FIRST_KEY = 1; // a key or `}`, just after `{`
const KEY = 2; // a key, after `,` in an object
const AFTER = 3; // `,` or the container's closer, after a value

const stack = new Uint8Array(MAX_DEPTH);

/** What isJsonObject finds. */
export const NOT_SURE = 0;
export const OBJECT = 1;
/** An object with line breaks between its tokens: one line of NDJSON only once they are made spaces. */
export const OBJECT_ON_LINES = 2;

/**
 * OBJECT (or OBJECT_ON_LINES) when b[start, end) is one JSON object (JSON whitespace around it allowed), as
 * JSON.parse reads it from these bytes decoded as UTF-8; the bytes must be valid UTF-8. NOT_SURE otherwise.
 */
export function isJsonObject(b: Uint8Array, start: number, end: number): number {
  let i = start;
  let space = 0;
  let breaks = 0;
  while (i < end && (space = SPACE[b[i]!]!) !== 0) ((breaks |= space), i++);
  if (i >= end || b[i] !== 0x7b) return NOT_SURE;
  let depth = 0;
  let state = VALUE;
  for (;;) {
    if (state === AFTER && depth === 0) {
      while (i < end && (space = SPACE[b[i]!]!) !== 0) ((breaks |= space), i++);
      return i !== end ? NOT_SURE : breaks & 2 ? OBJECT_ON_LINES : OBJECT;
    }
    while (i < end && (space = SPACE[b[i]!]!) !== 0) ((breaks |= space), i++);
    if (i >= end) return NOT_SURE;
    const c = b[i]!;
    if (state === VALUE) {
      if (c === 0x7b || c === 0x5b) {
        if (depth === MAX_DEPTH) return NOT_SURE;
        stack[depth++] = c === 0x7b ? IN_OBJECT : IN_ARRAY;
        i++;
        if (c === 0x7b) state = FIRST_KEY;
        else {
          while (i < end && (space = SPACE[b[i]!]!) !== 0) ((breaks |= space), i++);
          if (i < end && b[i] === 0x5d) {
            depth--;
            i++;
            state = AFTER;
          }
        }
        continue;
      }
      if (c === 0x22) i = stringEnd(b, i, end);
      else if (c === 0x2d || isDigit(c)) i = numberEnd(b, i, end);
      else if (c === 0x74) i = literalEnd(b, i, end, TRUE);
      else if (c === 0x66) i = literalEnd(b, i, end, FALSE);
      else if (c === 0x6e) i = literalEnd(b, i, end, NULL);
      else return NOT_SURE;
      if (i < 0) return NOT_SURE;
      state = AFTER;
    } else if (state === AFTER) {
      const top = stack[depth - 1];
      if (c === 0x2c) {
        i++;
        state = top === IN_OBJECT ? KEY : VALUE;
      } else if (c === (top === IN_OBJECT ? 0x7d : 0x5d)) {
        depth--;
        i++;
      } else return NOT_SURE;
    } else {
      if (c === 0x7d && state === FIRST_KEY) {
        depth--;
        i++;
        state = AFTER;
        continue;
      }
      if (c !== 0x22) return NOT_SURE;
      i = stringEnd(b, i, end);
      if (i < 0) return NOT_SURE;
      while (i < end && (space = SPACE[b[i]!]!) !== 0) ((breaks |= space), i++);
      if (i >= end || b[i] !== 0x3a) return NOT_SURE;
      i++;
      state = VALUE;
    }
  }
}
