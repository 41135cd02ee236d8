/**
 * Syslog messages in a TCP stream (RFC 6587): each either ends with a newline (non-transparent framing)
 * or is preceded by its length in bytes and a space (octet counting). `auto` tells them apart at the
 * start of each message: a digit there begins a length, anything else (a message starts with `<`) a line.
 * Pure: bytes in, messages out (as views of the bytes, never decoded here: an event may be made from
 * them as they are); a message longer than the limit is cut there and marked.
 */

export type Framing = 'auto' | 'newline' | 'octet_counted';

export interface Frame {
  /** The message's bytes, without its framing (the newline and a CR before it, or the count). */
  bytes: Buffer;
  truncated: boolean;
}

/** A length prefix longer than this many digits is no length: the rest is read as lines. */
const MAX_LENGTH_DIGITS = 10;

export class SyslogFramer {
  private buf: Buffer = Buffer.alloc(0);
  /**
   * Chunks held while they cannot complete a message (no newline yet, fewer bytes than the count): joined
   * only once they may, so a sender trickling bytes costs their size once, not once per chunk.
   */
  private held: Buffer[] = [];
  private heldBytes = 0;
  private waitFor: 'newline' | number | undefined;
  /** Bytes of an octet-counted message still to be skipped (its part past the limit). */
  private skip = 0;
  /** In a newline-framed message past the limit: skip up to its newline. */
  private skippingLine = false;

  constructor(
    private readonly framing: Framing,
    private readonly maxBytes: number,
  ) {}

  /** The messages that the stream's bytes so far complete. */
  push(chunk: Buffer): Frame[] {
    const total = this.buf.length + this.heldBytes + chunk.length;
    if (
      (this.waitFor === 'newline' && chunk.indexOf(10) < 0 && total <= this.maxBytes) ||
      (typeof this.waitFor === 'number' && total < this.waitFor)
    ) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      return [];
    }
    this.buf = this.buf.length || this.held.length ? Buffer.concat([this.buf, ...this.held, chunk]) : chunk;
    this.held = [];
    this.heldBytes = 0;
    this.waitFor = undefined;
    const out: Frame[] = [];
    for (;;) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, this.buf.length);
        this.skip -= n;
        this.buf = this.buf.subarray(n);
        if (this.skip > 0) return out;
      }
      if (this.skippingLine) {
        const nl = this.buf.indexOf(10);
        if (nl < 0) {
          this.buf = Buffer.alloc(0);
          return out;
        }
        this.buf = this.buf.subarray(nl + 1);
        this.skippingLine = false;
      }
      if (this.buf.length === 0) return out;
      const frame = this.octetCounted() ? this.counted() : this.line();
      if (frame === undefined) return out;
      if (frame !== null) out.push(frame);
    }
  }

  /** What the stream held when it ended: a last line without its newline. */
  end(): Frame | undefined {
    if (this.held.length) this.buf = Buffer.concat([this.buf, ...this.held]);
    this.held = [];
    if (this.skippingLine || this.skip > 0 || this.buf.length === 0) return undefined;
    const bytes = withoutCr(this.buf);
    this.buf = Buffer.alloc(0);
    return bytes.length ? { bytes, truncated: false } : undefined;
  }

  private octetCounted(): boolean {
    if (this.framing === 'newline') return false;
    if (this.framing === 'octet_counted') return true;
    const c = this.buf[0]!;
    if (c < 0x30 || c > 0x39) return false;
    // `auto`: a count is digits, a space and then a message's `<PRI>`; a line that starts with digits
    // (`200 OK from device`) is a line.
    const sp = this.buf.indexOf(0x20);
    if (sp < 0) return this.buf.length <= MAX_LENGTH_DIGITS; // undecided until the space comes
    return sp <= MAX_LENGTH_DIGITS && (sp + 1 >= this.buf.length || this.buf[sp + 1] === 0x3c);
  }

  /** The next octet-counted message; undefined when incomplete, null for an empty one. */
  private counted(): Frame | null | undefined {
    const sp = this.buf.indexOf(0x20);
    if (sp < 0 || (sp + 1 >= this.buf.length && this.framing === 'auto')) {
      // Not even a length yet (or, with `auto`, not the byte after it); past a length's digits it is no count.
      if (this.buf.length > MAX_LENGTH_DIGITS + 1) return this.line();
      return undefined;
    }
    const digits = this.buf.toString('latin1', 0, sp);
    if (!/^\d{1,10}$/.test(digits)) return this.line();
    const len = Number(digits);
    const body = this.buf.subarray(sp + 1);
    const take = Math.min(len, this.maxBytes);
    if (body.length < take) {
      this.waitFor = sp + 1 + take;
      return undefined;
    }
    const message = body.subarray(0, take);
    const bytes = message[take - 1] === 10 ? withoutCr(message.subarray(0, take - 1)) : message;
    if (body.length >= len) this.buf = body.subarray(len);
    else {
      this.skip = len - body.length;
      this.buf = Buffer.alloc(0);
    }
    return len === 0 ? null : { bytes, truncated: len > this.maxBytes };
  }

  /** The next newline-framed message; undefined when incomplete, null for an empty line. */
  private line(): Frame | null | undefined {
    const nl = this.buf.indexOf(10);
    if (nl < 0 || nl > this.maxBytes) {
      if (this.buf.length <= this.maxBytes) {
        this.waitFor = 'newline';
        return undefined;
      }
      // Longer than the limit: the first part is the message, the rest of the line is skipped.
      const bytes = this.buf.subarray(0, this.maxBytes);
      this.buf = this.buf.subarray(this.maxBytes);
      this.skippingLine = true;
      return { bytes, truncated: true };
    }
    const bytes = withoutCr(this.buf.subarray(0, nl));
    this.buf = this.buf.subarray(nl + 1);
    return bytes.length === 0 ? null : { bytes, truncated: false };
  }
}

/** A line without the CR of a CRLF ending. */
function withoutCr(line: Buffer): Buffer {
  return line[line.length - 1] === 13 ? line.subarray(0, line.length - 1) : line;
}
