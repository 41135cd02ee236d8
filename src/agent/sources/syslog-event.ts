/**
 * A syslog message as its event's JSON text: the parser's fields, then a parse error if the message was
 * neither RFC, `truncated` if it was cut, then the sender's address and port. Two ways to the same text:
 * `syslogEvent` from the message as a string, for transforms that read the event; `SyslogEventWriter`
 * as bytes, straight from the frame, for events that go to the sinks as they are.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { escapedBound, escapedLength, escapeJsonString } from '../../util/json-escape.js';
import type { SyslogParser } from '../parsers/syslog.js';

export const PARSE_ERROR = 'not an RFC 5424 or RFC 3164 syslog message';

/** The end of every event from one sender: its address and port (and the object's closing brace). */
export function senderSuffix(address: string, port: number): string {
  return `,"client.address":${JSON.stringify(address)},"client.port":${port}}`;
}

/**
 * A message as an event's JSON text. The parser's fields come in one order, so their object has one
 * shape; the sender's part is written once per connection.
 */
export function syslogEvent(
  parser: SyslogParser,
  text: string,
  truncated: boolean,
  sender: string,
): { event: string; parsed: boolean } {
  const fields = parser.parse(text);
  const parsed = fields.appname !== undefined || fields.severity !== undefined || fields.message !== text;
  if (!parsed) fields.parse_error = PARSE_ERROR;
  if (truncated) fields.truncated = true;
  const json = JSON.stringify(fields);
  return { event: json.length > 2 ? json.slice(0, -1) + sender : `{${sender.slice(1)}`, parsed };
}

/** A header's fields are worked out again after this long: an RFC 3164 stamp's year depends on now. */
const HEADER_REUSE_MS = 60_000;
/** Headers longer than this are not kept for the lines after. */
const MAX_KEPT_HEADER = 1024;
/** Messages longer than this are measured before they are written. */
const MEASURED_FROM = 4096;
const EMPTY = Buffer.alloc(0);

/**
 * Events as bytes, the same bytes as `syslogEvent`'s text. The message is escaped from the frame into
 * the event, never made a string; the JSON of the part before it (priority, stamp, host, app) is made
 * once for the lines that share it, as lines from one sender mostly do within a second.
 */
export class SyslogEventWriter {
  /** The header (the line before its message) last seen, and its JSON up to the message's opening quote. */
  private header: string | undefined;
  private headerAt = 0;
  private head: Buffer = EMPTY;
  /** Whether the last message was syslog (false: it went with `parse_error`). */
  parsed = false;

  constructor(private readonly parser: SyslogParser) {}

  /**
   * The event's JSON, or undefined where `syslogEvent` must make it: a message that is not valid UTF-8
   * (its decoding replaces bytes) or has no message field.
   * @param sender `senderSuffix`'s bytes
   */
  write(frame: Buffer, truncated: boolean, sender: Buffer): Buffer | undefined {
    const ascii = isAscii(frame);
    if (!ascii && !isUtf8(frame)) return undefined;
    // latin1 decoding of ASCII is a copy; its characters are the bytes, so string and byte offsets agree.
    const line = frame.toString(ascii ? 'latin1' : 'utf8');
    const at = this.parser.messageAt(line);
    if (at < 0) return undefined;
    const header = line.slice(0, at);
    const now = Date.now();
    let head: Buffer = this.head;
    if (header !== this.header || now - this.headerAt >= HEADER_REUSE_MS) {
      head = this.newHeader(line, at > 0);
      // A header of unusual length (a hostname of 60,000 characters) is not kept for the next line.
      if (header.length <= MAX_KEPT_HEADER) {
        this.header = header;
        this.head = head;
        // No longer than the parser keeps the instant of its stamp: the year is inferred from the clock.
        this.headerAt = (at > 0 && this.parser.stampedAt) || now;
      } else {
        this.header = undefined;
        this.head = EMPTY;
      }
    }
    this.parsed = at > 0;
    const start = ascii || at === 0 ? at : Buffer.byteLength(header);
    const tail = (this.parsed ? 0 : PARSE_ERROR_MEMBER.length) + (truncated ? TRUNCATED_MEMBER.length : 0);
    // Long messages are measured first: the bound of six bytes a byte would take slabs of six times their size.
    const length = frame.length - start;
    const escaped = length > MEASURED_FROM ? escapedLength(frame, start, frame.length) : escapedBound(length);
    const bound = head.length + escaped + 1 + tail + sender.length;
    if (slab.length - slabAt < bound) {
      slab = Buffer.allocUnsafeSlow(Math.max(bound, SLAB_BYTES));
      slabAt = 0;
    }
    const out = slab;
    const from = slabAt;
    // TypedArray's set, not Buffer's copy: that makes a view of the source for every copy.
    out.set(head, from);
    let o = escapeJsonString(frame, start, frame.length, out, from + head.length);
    out[o++] = 0x22;
    if (!this.parsed) o = put(out, o, PARSE_ERROR_MEMBER);
    if (truncated) o = put(out, o, TRUNCATED_MEMBER);
    o = put(out, o, sender);
    slabAt = o;
    return out.subarray(from, o);
  }

  /** The JSON of a line's header fields, up to the message's opening quote. */
  private newHeader(line: string, parsed: boolean): Buffer {
    let head = '{';
    if (parsed) {
      const fields = this.parser.parse(line);
      // The message is the parser's last field: everything before it is the header's.
      for (const key in fields) {
        const value = fields[key];
        if (key !== 'message' && value !== undefined) head += `${JSON.stringify(key)}:${JSON.stringify(value)},`;
      }
    }
    return Buffer.from(`${head}"message":"`);
  }
}

/**
 * Memory events are written into, one after another, by every writer (each writes an event whole before
 * another can run): no scratch buffer to copy from, no pooled allocation per event, and no slab per idle
 * connection. A slab is let go once the batcher has copied its last event.
 */
const SLAB_BYTES = 64 * 1024;
let slab = Buffer.alloc(0);
let slabAt = 0;

function put(out: Buffer, at: number, bytes: Buffer): number {
  out.set(bytes, at);
  return at + bytes.length;
}

const PARSE_ERROR_MEMBER = Buffer.from(`,"parse_error":${JSON.stringify(PARSE_ERROR)}`);
const TRUNCATED_MEMBER = Buffer.from(',"truncated":true');
