/**
 * Lines of a byte stream, with the longest line bounded: the first `maxLineBytes` of a longer line are
 * kept and marked truncated, the rest is skipped up to its newline, and reading goes on. Shared by the
 * stdin and file sources; the file source also needs where each line ends, to checkpoint.
 *
 * Not split2: split2 can only fail the stream on a long line (`maxLength`) or drop the whole line
 * (`skipOverflow`), and without a bound it buffers a line of any size in memory.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export interface LineStats {
  lines: number;
  truncated: number;
}

export interface Line {
  /** The line decoded; '' when the splitter does not decode (then `raw` holds it). */
  text: string;
  /**
   * The line's bytes, when the splitter does not decode: a view into the chunk, valid until the chunk's
   * memory is reused for the next read (a line that spans chunks is a copy of its own).
   */
  raw?: Buffer;
  truncated: boolean;
  /** Offset just past the line's newline, within the chunk fed. */
  end: number;
}

/** Whole lines of one chunk handed on as one piece (LineSplitter.nextRun). */
export interface Run {
  /** The lines' bytes as they lie in the stream, joined by their newlines (the last one's not included). */
  raw: Buffer;
  lines: number;
  /** Offset just past the last line's newline, within the chunk fed. */
  end: number;
}

export class LineSplitter {
  readonly stats: LineStats = { lines: 0, truncated: 0 };
  private parts: Buffer[] = [];
  private kept = 0;
  private skipping = false;
  private data: Buffer = Buffer.alloc(0);
  private pos = 0;

  /** @param decode false: lines stay bytes (`raw`), for pipelines that ship them without reading them */
  constructor(
    private readonly maxLineBytes: number,
    private readonly decode = true,
  ) {}

  /** Whether a line has begun and not ended yet. */
  get pending(): boolean {
    return this.kept > 0 || this.skipping;
  }

  /** Takes the next chunk of the stream; its lines come out of next(). */
  feed(data: Buffer): void {
    this.data = data;
    this.pos = 0;
  }

  /**
   * The next complete line of the chunk fed, or undefined once the rest of it is an unfinished line (kept
   * for the next chunk). One line at a time, decoded only when asked for: a chunk's lines are not all
   * alive at once, so they die young, before the garbage collector has to move them.
   */
  next(): Line | undefined {
    const data = this.data;
    while (this.pos < data.length) {
      const start = this.pos;
      const nl = data.indexOf(0x0a, start);
      const end = nl < 0 ? data.length : nl;
      if (!this.skipping) {
        const room = this.maxLineBytes - this.kept;
        // Parts of a line that goes on in the next chunk are copied: readers reuse a chunk's memory.
        if (end - start > room) {
          this.parts.push(Buffer.from(data.subarray(start, start + room)));
          this.kept += room;
          this.skipping = true;
        } else if (nl >= 0 && this.parts.length === 0) {
          // The common case, a whole line inside the chunk: decode it in place, no copy.
          const cut = end > start && data[end - 1] === 0x0d ? end - 1 : end;
          this.stats.lines++;
          this.pos = nl + 1;
          return this.decode
            ? { text: data.toString('utf8', start, cut), truncated: false, end: nl + 1 }
            : { text: '', raw: data.subarray(start, cut), truncated: false, end: nl + 1 };
        } else {
          this.parts.push(Buffer.from(data.subarray(start, end)));
          this.kept += end - start;
        }
      }
      if (nl < 0) break;
      this.pos = nl + 1;
      return this.take(nl + 1);
    }
    this.pos = data.length;
    return undefined;
  }

  /**
   * The next lines of the chunk as one run, for a stream whose lines are shipped as they are: every line of
   * it whole within the chunk, within the line limit, and looking like a JSON object (`{` first, `}` last, so
   * no CR either), taken up to `maxBytes` (at least one line). Undefined when the next line is not such a
   * line (a line begun in an earlier chunk, a blank one, any other text): next() takes it instead. Lines
   * cost one newline search each, and no object.
   */
  nextRun(maxBytes: number): Run | undefined {
    if (this.decode || this.kept > 0 || this.skipping) return undefined;
    const data = this.data;
    const start = this.pos;
    let at = start;
    let lines = 0;
    // A line that does not start as an object is left to next() before its newline is searched for.
    while (at < data.length && data[at] === 0x7b) {
      const nl = data.indexOf(0x0a, at);
      if (nl < 0 || nl - at > this.maxLineBytes || data[nl - 1] !== 0x7d) break;
      if (lines > 0 && nl - start > maxBytes) break;
      lines++;
      at = nl + 1;
    }
    if (lines === 0) return undefined;
    this.stats.lines += lines;
    this.pos = at;
    return { raw: data.subarray(start, at - 1), lines, end: at };
  }

  /** The unfinished last line (end of input), if any; `end` is 0. */
  finish(): Line | undefined {
    return this.pending ? this.take(0) : undefined;
  }

  /** Forgets a line begun (the file it came from was truncated). */
  reset(): void {
    this.parts = [];
    this.kept = 0;
    this.skipping = false;
  }

  private take(end: number): Line {
    let buf = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
    const truncated = this.skipping;
    if (buf.length > 0 && buf[buf.length - 1] === 0x0d && !truncated) buf = buf.subarray(0, -1);
    this.reset();
    this.stats.lines++;
    if (truncated) this.stats.truncated++;
    if (!this.decode && !truncated) return { text: '', raw: buf, truncated, end };
    // A cut may fall inside a UTF-8 character: the decoder drops the incomplete tail.
    const text = truncated ? new StringDecoder('utf8').write(buf) : buf.toString('utf8');
    return { text, truncated, end };
  }
}

/** Calls `onLine` for each line of `input`, awaiting it, so a slow consumer pauses the stream. */
export async function forEachLine(
  input: Readable,
  maxLineBytes: number,
  onLine: (line: string, truncated: boolean) => Promise<void>,
): Promise<LineStats> {
  const splitter = new LineSplitter(maxLineBytes);
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    splitter.feed(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    for (let l = splitter.next(); l; l = splitter.next()) await onLine(l.text, l.truncated);
  }
  const last = splitter.finish();
  if (last) await onLine(last.text, last.truncated);
  return splitter.stats;
}
