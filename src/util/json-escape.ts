/**
 * UTF-8 text written as the inside of a JSON string, straight from a buffer into another: the UTF-8 of
 * `JSON.stringify` of the text, without its quotes, but without decoding the text to a string,
 * stringifying it and encoding the result again (a syslog message is mostly an application's JSON line,
 * full of quotes to escape). Bytes of multi-byte characters are copied as they are: JSON.stringify
 * escapes no character past ASCII but lone surrogates, which valid UTF-8 cannot hold.
 */

/** 1 for each byte that JSON escapes: control characters, `"` and `\`. */
const ESCAPED = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) ESCAPED[c] = 1;
ESCAPED[0x22] = 1;
ESCAPED[0x5c] = 1;

const HEX = [0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66];

/** Bytes `escapeJsonString` may write for `n` bytes of text at most: `\u00XX` for each. */
export const escapedBound = (n: number): number => 6 * n;

/** The bytes `escapeJsonString` writes for `src[start, end)`. */
export function escapedLength(src: Uint8Array, start: number, end: number): number {
  let n = end - start;
  for (let i = start; i < end; i++) {
    const c = src[i]!;
    if (ESCAPED[c] === 0) continue;
    n += c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 1 : 5;
  }
  return n;
}

/**
 * Writes `src[start, end)`, which must be valid UTF-8 (`isUtf8`), escaped as JSON string content into `out` at `at`
 * (which has room for `escapedBound` of the length); returns where the writing ended.
 */
export function escapeJsonString(src: Uint8Array, start: number, end: number, out: Uint8Array, at: number): number {
  let o = at;
  for (let i = start; i < end; i++) {
    const c = src[i]!;
    if (ESCAPED[c] === 0) out[o++] = c;
    else o = escapeOne(c, out, o);
  }
  return o;
}

function escapeOne(c: number, out: Uint8Array, at: number): number {
  let o = at;
  out[o++] = 0x5c;
  switch (c) {
    case 0x22:
    case 0x5c:
      out[o++] = c;
      break;
    case 0x08:
      out[o++] = 0x62; // \b
      break;
    case 0x09:
      out[o++] = 0x74; // \t
      break;
    case 0x0a:
      out[o++] = 0x6e; // \n
      break;
    case 0x0c:
      out[o++] = 0x66; // \f
      break;
    case 0x0d:
      out[o++] = 0x72; // \r
      break;
    default:
      out[o++] = 0x75; // \u00XX, lower-case hex as JSON.stringify writes it
      out[o++] = 0x30;
      out[o++] = 0x30;
      out[o++] = HEX[c >> 4]!;
      out[o++] = HEX[c & 15]!;
  }
  return o;
}
