/**
 * An ingest body's events, told apart in JavaScript by the agent's relay (the `http` source), which hands
 * each event on as the bytes it came as: never re-serialised, so key order, duplicate keys and large
 * integers reach the receiver as the client wrote them. The verdicts are the service's (whose DuckDB reader
 * decides them there): an NDJSON line that is not JSON, or not an object, is a failed event numbered among
 * the non-blank lines; an array whose structure or any element does not parse is refused whole (400); an
 * element that is not an object is a failed event. Most events are told to be objects from their bytes
 * (json-scan.ts); the rest by JSON.parse, which also names what they are. Pure functions over the decoded body.
 */
import { isUtf8 } from 'node:buffer';
import { IngestBodyError, invalidBody } from './errors.js';
import { isJsonObject, OBJECT, OBJECT_ON_LINES } from './json-scan.js';

/** An event that could not be taken, numbered from 1 as the ingest result's failures number them. */
export interface EventFailure {
  event: number;
  error: string;
}

export interface SplitBody {
  /**
   * Each event's JSON object, as its bytes in the body (JSON whitespace around it left out; line breaks
   * between its tokens made spaces).
   */
  events: Buffer[];
  /** The first MAX_LISTED_FAILURES failures, in order. */
  failures: EventFailure[];
  /** How many failed in all. */
  failed: number;
}

/** At most this many failures are listed; `failed` counts them all (as the service's result does). */
export const MAX_LISTED_FAILURES = 1000;

/** The largest event taken, as the service's reader takes (its maximum_object_size). */
export const MAX_EVENT_BYTES = 16 * 1024 * 1024;

/** Collects a body's verdicts, refusing the body whole once it holds more than `maxEvents` values. */
class Verdicts implements SplitBody {
  events: Buffer[] = [];
  failures: EventFailure[] = [];
  failed = 0;
  constructor(private readonly maxEvents: number) {}

  /** Takes one value's bytes (valid UTF-8, trimmed), the `n`th of the body. */
  take(bytes: Buffer, n: number): void {
    if (n > this.maxEvents)
      throw new IngestBodyError(
        'too_large',
        `the body holds more than ${this.maxEvents} events; send smaller requests`,
      );
    const judged = judge(bytes, n);
    if (typeof judged === 'string') this.fail(n, judged);
    else this.events.push(judged);
  }

  fail(n: number, error: string): void {
    this.failed++;
    if (this.failures.length < MAX_LISTED_FAILURES) this.failures.push({ event: n, error });
  }
}

/**
 * One value's verdict (its bytes valid UTF-8): the bytes to hand on when it is a JSON object, else why it
 * fails. An object spread over lines (a pretty-printed array's element) is handed on with its line breaks
 * made spaces, so that it stays one line of the NDJSON it is shipped in: JSON strings hold none raw.
 */
function judge(bytes: Buffer, n: number): Buffer | string {
  // Counted in characters, as the relay always has: decoded only when the bytes alone pass the limit.
  if (bytes.length > MAX_EVENT_BYTES && bytes.toString('utf8').length > MAX_EVENT_BYTES)
    return `event ${n}: larger than ${MAX_EVENT_BYTES} bytes`;
  const found = isJsonObject(bytes, 0, bytes.length);
  if (found === OBJECT) return bytes;
  if (found === OBJECT_ON_LINES) return oneLine(bytes);
  const error = verdict(bytes.toString('utf8'), n);
  if (error !== undefined) return error;
  return bytes.includes(0x0a) || bytes.includes(0x0d) ? oneLine(bytes) : bytes;
}

function oneLine(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  for (let i = 0; i < copy.length; i++) if (copy[i] === 0x0a || copy[i] === 0x0d) copy[i] = 0x20;
  return copy;
}

/** JSON's whitespace: space, tab, line feed, carriage return (not the other Unicode spaces trim() takes). */
const isJsonSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** The range of b[start, end) without JSON whitespace around it. */
function trimmed(b: Buffer, start: number, end: number): Buffer {
  while (start < end && isJsonSpace(b[start]!)) start++;
  while (end > start && isJsonSpace(b[end - 1]!)) end--;
  return b.subarray(start, end);
}

const startsWithBom = (b: Buffer) => b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf;

/** The name the service's reader gives a JSON value's type (DuckDB's json_type, in lower case). */
function typeName(value: unknown, text: string): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return 'varchar';
    case 'boolean':
      return 'boolean';
    case 'number': {
      const t = text.trim();
      if (/[.eE]/.test(t)) return 'double';
      const n = BigInt(t);
      if (n < 0n) return n >= -(2n ** 63n) ? 'bigint' : 'double';
      return n < 2n ** 64n ? 'ubigint' : 'double';
    }
    default:
      return 'object';
  }
}

/** The verdict on one event's text: undefined when it is a JSON object, else why it fails. */
function verdict(text: string, n: number): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return `event ${n}: invalid JSON`;
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return undefined;
  return `event ${n}: expected a JSON object, got ${typeName(value, text)}`;
}

/**
 * One JSON value per line; blank lines are skipped and not numbered, and a byte order mark that starts the
 * body is not part of it. A line that is not UTF-8 fails.
 */
export function splitNdjson(body: Buffer, maxEvents = Infinity): SplitBody {
  const out = new Verdicts(maxEvents);
  const utf8 = isUtf8(body);
  let n = 0;
  for (let at = 0; at < body.length;) {
    let end = body.indexOf(0x0a, at);
    if (end < 0) end = body.length;
    let line = trimmed(body, at, end);
    if (at === 0 && startsWithBom(line)) line = trimmed(line, 3, line.length);
    at = end + 1;
    if (!utf8 && !isUtf8(line)) {
      out.fail(++n, `event ${n}: invalid JSON`);
      continue;
    }
    if (line.length === 0) continue;
    out.take(line, ++n);
  }
  return out;
}

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && isJsonSpace(b[i]!)) i++;
  return i;
}

/** The index just past the string whose opening quote is at `i`, or -1 if it never closes. */
function stringEnd(b: Buffer, i: number): number {
  for (let j = b.indexOf(0x22, i + 1); j >= 0; j = b.indexOf(0x22, j + 1)) {
    let slashes = 0;
    while (b[j - 1 - slashes] === 0x5c) slashes++;
    if (slashes % 2 === 0) return j + 1;
  }
  return -1;
}

/**
 * The end of the array element starting at `i` (the index of the `,` or `]` after it), found by brackets
 * and strings alone: the element itself is judged afterwards.
 */
function elementEnd(b: Buffer, i: number): number {
  let depth = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (c === 0x22) {
      i = stringEnd(b, i);
      if (i < 0) return -1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return c === 0x5d ? i : -1;
      depth--;
    } else if (c === 0x2c && depth === 0) return i;
    i++;
  }
  return -1;
}

/** Where byte `i` of the body is as a character of its text (what error messages count). */
const characterAt = (b: Buffer, i: number) => b.subarray(0, i).toString('utf8').length;

const NOT_CLOSED = 'invalid JSON body: the JSON array is not closed with "]" (a truncated body?)';

/** One JSON array of values; refused whole if it does not parse (or is not UTF-8). */
export function splitArray(body: Buffer, maxEvents = Infinity): SplitBody {
  if (!isUtf8(body)) throw invalidBody('invalid JSON body: it is not valid UTF-8');
  const out = new Verdicts(maxEvents);
  let i = skipSpace(body, startsWithBom(body) ? 3 : 0);
  if (body[i] !== 0x5b) throw invalidBody('invalid JSON body: expected a JSON array');
  i = skipSpace(body, i + 1);
  if (body[i] === 0x5d) i++;
  else {
    for (let n = 1; ; n++) {
      const end = elementEnd(body, i);
      if (end < 0) throw invalidBody(NOT_CLOSED);
      const element = trimmed(body, i, end);
      if (element.length === 0)
        throw invalidBody(`invalid JSON body: element ${n} is empty (at character ${characterAt(body, i)})`);
      if (n > maxEvents)
        throw new IngestBodyError('too_large', `the body holds more than ${maxEvents} events; send smaller requests`);
      const judged = judge(element, n);
      if (typeof judged !== 'string') out.events.push(judged);
      else if (judged.endsWith('invalid JSON'))
        throw invalidBody(`invalid JSON body: element ${n} (at character ${characterAt(body, i)}) is not valid JSON`);
      else out.fail(n, judged);
      i = skipSpace(body, end + 1);
      if (body[end] === 0x5d) break;
    }
  }
  if (skipSpace(body, i) < body.length) throw invalidBody(NOT_CLOSED);
  return out;
}
