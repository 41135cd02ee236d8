/**
 * The agent's durable queue on disk: an append-only log of records in segment files, read in order and
 * acknowledged up to a position once a sink has delivered them.
 *
 * A record is [u32 tag and length][u32 CRC-32][payload], little-endian. The first word's low 28 bits are
 * the payload's length and its high 4 bits a tag the writer gives the record (the delivery layer's: the
 * batch's encoding); the CRC covers the tag and the payload. Segments of this format are `.seg` files.
 * Segments written before tags are `.log` files ([u32 length][u32 CRC-32 of the payload][payload]): they
 * are read as they always were (tag 0) and never appended to, and a version before tags, which knows only
 * `.log` files, leaves `.seg` files alone instead of taking them for damaged ones. An append resolves only
 * after fsync, so a record the caller was told about survives kill -9 and power loss. After a crash the
 * last segment may end in a torn record: opening the log truncates it at the first record that is short
 * or fails its checksum, and appending continues from there. The acknowledged position is written
 * atomically (temporary file, fsync, rename), so it never points into the middle of a record.
 *
 * Measured choice over better-queue's stores: those keep a row per task in SQLite or memory; a segment
 * log is sequential I/O with one fsync per group of appends, and recovery needs no database.
 */
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

/** A record's payload, whole or in pieces written one after another (a batch compressed in stages). */
export type Payload = Buffer | readonly Buffer[];

const piecesOf = (p: Payload): readonly Buffer[] => (Buffer.isBuffer(p) ? [p] : p);
/** The bytes of a payload, whole or in pieces. */
export const payloadSize = (p: Payload): number => piecesOf(p).reduce((n, b) => n + b.length, 0);

/** A position in the log: a segment number and a byte offset in it. */
export interface LogPosition {
  segment: number;
  offset: number;
}

export interface LogRecord {
  payload: Buffer;
  /** What the writer said of the record (0 to 15; 0 for records written before tags). */
  tag: number;
  /** The position just after this record: acknowledge it to release the record. */
  next: LogPosition;
}

export interface SegmentLogOptions {
  /** A segment is sealed and a new one started once it reaches this size. */
  segmentBytes?: number;
}

const HEADER = 8;
const TAG_SHIFT = 28;
/** The length's bits of a record's first word; the largest record is one byte short of 256 MiB. */
const MAX_RECORD = (1 << TAG_SHIFT) - 1;
/** The largest record of a `.log` segment, written before tags. */
const MAX_LEGACY_RECORD = 1 << TAG_SHIFT;
export const MAX_TAG = 15;

/** `.seg`: records with tags; `.log`: records written before tags. */
type SegmentFormat = 'seg' | 'log';

/** A record's CRC: of the tag (when there is one) and the payload, so a flipped tag bit is caught too. */
function recordCrc(tag: number, pieces: readonly Buffer[]): number {
  let crc = tag === 0 ? 0 : crc32(Buffer.of(tag));
  for (const piece of pieces) crc = crc32(piece, crc);
  return crc;
}

/** A record's first word read, as its segment's format frames it: its tag and its length (undefined: not a record). */
function frameOf(word: number, format: SegmentFormat): { tag: number; len: number } | undefined {
  if (format === 'log') return word <= MAX_LEGACY_RECORD ? { tag: 0, len: word } : undefined;
  return { tag: word >>> TAG_SHIFT, len: word & MAX_RECORD };
}
const segmentName = (n: number, format: SegmentFormat) => `${String(n).padStart(10, '0')}.${format}`;

/** writev until every byte is written: one call may write less (a signal, a nearly full disk). */
async function writeAll(fh: FileHandle, pieces: Buffer[], total: number): Promise<void> {
  let written = (await fh.writev(pieces)).bytesWritten;
  while (written < total) {
    const rest: Buffer[] = [];
    let skip = written;
    for (const p of pieces) {
      if (skip >= p.length) skip -= p.length;
      else {
        rest.push(skip > 0 ? p.subarray(skip) : p);
        skip = 0;
      }
    }
    const n = (await fh.writev(rest)).bytesWritten;
    if (n === 0) throw new Error('the queue file takes no more bytes (is the disk full?)');
    written += n;
  }
}

export function comparePositions(a: LogPosition, b: LogPosition): number {
  return a.segment !== b.segment ? a.segment - b.segment : a.offset - b.offset;
}

export class SegmentLog {
  private writer!: FileHandle;
  private pending: {
    payloads: readonly Payload[];
    tag: number;
    resolve: (next: LogPosition[]) => void;
    reject: (e: unknown) => void;
  }[] = [];
  private flushing = false;
  private closed = false;
  /** Records found damaged and skipped while reading sealed segments. */
  corruptRecords = 0;
  private ackWriting: Promise<void> = Promise.resolve();
  private ackQueued = false;

  private constructor(
    readonly dir: string,
    private readonly segmentBytes: number,
    private segments: number[],
    /** Segments written before tags (`.log` files): read, never appended to. */
    private readonly legacy: ReadonlySet<number>,
    private writeSegment: number,
    private writeOffset: number,
    private acked: LogPosition,
  ) {
    this.writtenFrom = { segment: writeSegment, offset: writeOffset };
  }

  private formatOf(segment: number): SegmentFormat {
    return this.legacy.has(segment) ? 'log' : 'seg';
  }

  private fileOf(segment: number): string {
    return join(this.dir, segmentName(segment, this.formatOf(segment)));
  }

  /**
   * Where this process started appending. Records from there on were written by this process and are
   * read back without checking their CRC again (they never went through a crash); older ones are checked.
   */
  private readonly writtenFrom: LogPosition;

  static async open(dir: string, opts: SegmentLogOptions = {}): Promise<SegmentLog> {
    await mkdir(dir, { recursive: true });
    const formats = new Map<number, SegmentFormat>();
    for (const f of await readdir(dir)) {
      const m = /^(\d{10})\.(log|seg)$/.exec(f);
      if (!m) continue;
      const n = Number(m[1]);
      if (formats.has(n)) throw new Error(`queue ${dir}: segment ${m[1]} is there both as .log and as .seg`);
      formats.set(n, m[2] as SegmentFormat);
    }
    const segments = [...formats.keys()].sort((a, b) => a - b);
    const legacy = new Set(segments.filter((n) => formats.get(n) === 'log'));
    const acked = await readAck(dir);
    if (segments.length === 0) segments.push(Math.max(1, acked.segment));
    let last = segments[segments.length - 1]!;
    let end = await recoverTail(join(dir, segmentName(last, formats.get(last) ?? 'seg')), formats.get(last) ?? 'seg');
    // A queue from before tags is read to its end, and appended to in a new segment of the new format.
    if (legacy.has(last)) {
      last += 1;
      end = 0;
      segments.push(last);
    }
    const log = new SegmentLog(dir, opts.segmentBytes ?? 64 * 1024 * 1024, segments, legacy, last, end, acked);
    log.writer = await open(log.fileOf(last), 'a');
    await syncDir(dir);
    return log;
  }

  /**
   * Appends records; resolves once they are on disk (fsync), with the position after each record.
   * Concurrent appends share one fsync.
   */
  append(payloads: readonly Payload[], tag = 0): Promise<LogPosition[]> {
    if (this.closed) return Promise.reject(new Error(`queue ${this.dir} is closed`));
    if (!Number.isInteger(tag) || tag < 0 || tag > MAX_TAG) return Promise.reject(new Error(`bad record tag ${tag}`));
    for (const p of payloads) {
      const size = payloadSize(p);
      if (size > MAX_RECORD)
        return Promise.reject(new Error(`a queue record of ${size} bytes is over the ${MAX_RECORD}-byte limit`));
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ payloads, tag, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.pending.length > 0) {
      const group = this.pending;
      this.pending = [];
      try {
        const positions: LogPosition[][] = [];
        for (const { payloads, tag } of group) {
          const mine: LogPosition[] = [];
          for (const p of payloads) {
            if (this.writeOffset >= this.segmentBytes) await this.roll();
            const pieces = piecesOf(p);
            const size = payloadSize(pieces);
            const header = Buffer.allocUnsafe(HEADER);
            header.writeUInt32LE(((tag << TAG_SHIFT) | size) >>> 0, 0);
            header.writeUInt32LE(recordCrc(tag, pieces), 4);
            await writeAll(this.writer, [header, ...pieces], HEADER + size);
            this.writeOffset += HEADER + size;
            mine.push({ segment: this.writeSegment, offset: this.writeOffset });
          }
          positions.push(mine);
        }
        await this.writer.sync();
        group.forEach((g, i) => g.resolve(positions[i]!));
      } catch (e) {
        for (const g of group) g.reject(e);
      }
    }
    this.flushing = false;
  }

  private async roll(): Promise<void> {
    await this.writer.sync();
    await this.writer.close();
    this.writeSegment += 1;
    this.segments.push(this.writeSegment);
    this.writeOffset = 0;
    this.writer = await open(this.fileOf(this.writeSegment), 'a');
    await syncDir(this.dir);
  }

  /** The position after the last acknowledged record: reading starts here after a restart. */
  get ackedPosition(): LogPosition {
    return { ...this.acked };
  }

  /**
   * Reads up to `max` records from `from` (the acknowledged position by default), in order.
   * @param alloc where payloads are read into (a pool, whose buffers the caller hands back)
   */
  async read(
    max: number,
    from: LogPosition = this.acked,
    alloc: (size: number) => Buffer = Buffer.allocUnsafe,
  ): Promise<LogRecord[]> {
    const out: LogRecord[] = [];
    let pos = { ...from };
    while (out.length < max && pos.segment <= this.writeSegment) {
      if (!this.segments.includes(pos.segment)) {
        pos = { segment: pos.segment + 1, offset: 0 };
        continue;
      }
      const isWriting = pos.segment === this.writeSegment;
      const file = this.fileOf(pos.segment);
      const format = this.formatOf(pos.segment);
      const end = isWriting ? this.writeOffset : (await stat(file)).size;
      if (pos.offset >= end) {
        if (isWriting) break;
        pos = { segment: pos.segment + 1, offset: 0 };
        continue;
      }
      const fh = await open(file, 'r');
      try {
        const header = Buffer.alloc(HEADER);
        while (out.length < max && pos.offset < end) {
          await fh.read(header, 0, HEADER, pos.offset);
          const frame = frameOf(header.readUInt32LE(0), format);
          const { tag, len } = frame ?? { tag: 0, len: 0 };
          const payload =
            frame && pos.offset + HEADER <= end && pos.offset + HEADER + len <= end ? alloc(len) : undefined;
          if (payload) await fh.read(payload, 0, len, pos.offset + HEADER);
          const trusted = comparePositions(pos, this.writtenFrom) >= 0;
          if (!payload || (!trusted && recordCrc(tag, [payload]) !== header.readUInt32LE(4))) {
            // A damaged sealed segment: what follows in it cannot be trusted to be framed correctly.
            this.corruptRecords++;
            pos = { segment: pos.segment + 1, offset: 0 };
            break;
          }
          pos = { segment: pos.segment, offset: pos.offset + HEADER + len };
          out.push({ payload, tag, next: { ...pos } });
        }
      } finally {
        await fh.close();
      }
    }
    return out;
  }

  /**
   * The size and end position of every record from the acknowledged position on, from their headers alone:
   * what a queue needs to know of a backlog at start without reading it into memory. A damaged record is
   * found (and skipped) when it is read.
   */
  async recordSizes(): Promise<{ next: LogPosition; bytes: number }[]> {
    const out: { next: LogPosition; bytes: number }[] = [];
    const header = Buffer.alloc(HEADER);
    for (const segment of this.segments) {
      if (segment < this.acked.segment) continue;
      let offset = segment === this.acked.segment ? this.acked.offset : 0;
      const end = segment === this.writeSegment ? this.writeOffset : (await stat(this.fileOf(segment))).size;
      const fh = await open(this.fileOf(segment), 'r');
      try {
        while (offset + HEADER <= end) {
          await fh.read(header, 0, HEADER, offset);
          const frame = frameOf(header.readUInt32LE(0), this.formatOf(segment));
          if (!frame) break;
          const { len } = frame;
          if (offset + HEADER + len > end) break;
          offset += HEADER + len;
          out.push({ next: { segment, offset }, bytes: HEADER + len });
        }
      } finally {
        await fh.close();
      }
    }
    return out;
  }

  /** Records every record before `upTo` as delivered (atomically) and deletes segments wholly before it. */
  async ack(upTo: LogPosition): Promise<void> {
    if (comparePositions(upTo, this.acked) <= 0) return;
    this.acked = { ...upTo };
    // One write at a time, each of the latest position: acknowledgements that arrive during a write are
    // folded into the next one instead of costing an fsync each.
    if (!this.ackQueued) {
      this.ackQueued = true;
      const write = this.ackWriting.then(() => {
        this.ackQueued = false;
        return this.persistAck();
      });
      // A failed write is its caller's error, and the next acknowledgement writes again.
      this.ackWriting = write.catch(() => undefined);
      return write;
    }
    await this.ackWriting;
  }

  private async persistAck(): Promise<void> {
    const upTo = { ...this.acked };
    const tmp = join(this.dir, 'ack.json.tmp');
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify(upTo));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, join(this.dir, 'ack.json'));
    await syncDir(this.dir);
    const done = this.segments.filter((s) => s < upTo.segment);
    for (const s of done) await rm(this.fileOf(s), { force: true });
    this.segments = this.segments.filter((s) => s >= upTo.segment);
  }

  /** Bytes written and not yet acknowledged (the queue's depth on disk). */
  async pendingBytes(): Promise<number> {
    let total = 0;
    for (const s of this.segments) {
      const size = s === this.writeSegment ? this.writeOffset : (await stat(this.fileOf(s))).size;
      total += s === this.acked.segment ? Math.max(0, size - this.acked.offset) : s > this.acked.segment ? size : 0;
    }
    return total;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    while (this.flushing || this.pending.length) await new Promise((r) => setTimeout(r, 1));
    this.closed = true;
    await this.ackWriting;
    await this.writer.close();
  }
}

async function readAck(dir: string): Promise<LogPosition> {
  try {
    const raw = JSON.parse(await readFile(join(dir, 'ack.json'), 'utf8')) as LogPosition;
    if (Number.isInteger(raw.segment) && Number.isInteger(raw.offset) && raw.segment >= 1 && raw.offset >= 0)
      return raw;
  } catch {
    // No acknowledgement yet (a new queue), or a file from before a crash that never reached its rename.
  }
  return { segment: 1, offset: 0 };
}

/** Finds the end of the last good record of a segment and cuts off anything after it (a torn write). */
async function recoverTail(file: string, format: SegmentFormat): Promise<number> {
  let fh: FileHandle;
  try {
    fh = await open(file, 'r+');
  } catch {
    await writeFile(file, '');
    return 0;
  }
  try {
    const size = (await fh.stat()).size;
    let offset = 0;
    const header = Buffer.alloc(HEADER);
    while (offset + HEADER <= size) {
      await fh.read(header, 0, HEADER, offset);
      const frame = frameOf(header.readUInt32LE(0), format);
      if (!frame) break;
      const { tag, len } = frame;
      if (offset + HEADER + len > size) break;
      const payload = Buffer.alloc(len);
      await fh.read(payload, 0, len, offset + HEADER);
      if (recordCrc(tag, [payload]) !== header.readUInt32LE(4)) break;
      offset += HEADER + len;
    }
    if (offset < size) {
      await fh.truncate(offset);
      await fh.sync();
    }
    return offset;
  } finally {
    await fh.close();
  }
}

/** fsync of a directory, so that a created or renamed file's name is durable too. */
/** Makes a rename or a new file in `dir` durable (off the event loop). */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
