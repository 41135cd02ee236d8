/**
 * Groups serialised events into batches by count, by bytes and by time, whichever comes first, and hands
 * each batch on (to the disk queue). add() waits while batches are being handed on, so a full queue slows
 * the sources down instead of growing memory.
 */
import { BufferPool } from '../queue/buffer-pool.js';
import type { Stream } from '../sources/source.js';

export interface BatchLimits {
  maxEvents: number;
  maxBytes: number;
  timeoutMs: number;
}

/** Where a line came from: acknowledged to its stream once the batch holding it is durable. */
export interface Mark {
  stream: Stream;
  offset: number;
  generation: number;
}

export const DEFAULT_BATCH: BatchLimits = { maxEvents: 10_000, maxBytes: 5 * 1024 * 1024, timeoutMs: 1000 };

/**
 * Batches being encoded and handed on (queued) while the next one gathers: two, because compressing a
 * batch (gzip level 1) takes longer than gathering the next one, and each batch held costs megabytes of
 * resident memory.
 */
const MAX_HANDING = 2;

export class Batcher {
  /**
   * The batch being gathered, already as NDJSON bytes: each line is encoded into it as it comes, so line
   * strings die young (cheap for the garbage collector) and a full batch needs no join.
   */
  private buf: Buffer;
  private used = 0;
  private count = 0;
  /** The last mark of each stream in the batch being gathered (offsets only grow within a stream). */
  private marks = new Map<Mark['stream'], Mark>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly handing: Promise<void>[] = [];
  /** Buffers of batches already handed on: the next batches gather into them. */
  private readonly pool = new BufferPool(MAX_HANDING + 1);

  /**
   * @param handOn takes each batch, one after another in order; the batch's memory is reused for a later
   *   batch once the returned promise settles, so handOn must not keep it beyond that.
   * @param encode turns a batch into what handOn gets (compression), as soon as the batch is cut: batches
   *   encode side by side while the hand-overs stay in order.
   */
  constructor(
    private readonly limits: BatchLimits,
    private readonly handOn: (batch: Buffer, count: number, marks: Mark[]) => Promise<void>,
    private readonly encode?: (batch: Buffer) => Promise<Buffer>,
  ) {
    this.buf = this.pool.take(this.capacity);
  }

  /** Room for a batch of maxBytes plus the line that crosses it. */
  private get capacity(): number {
    return this.limits.maxBytes + 64 * 1024;
  }

  /**
   * Adds a line. A full batch is handed on while the next one gathers; the caller must wait (a promise is
   * returned) only once MAX_HANDING batches are being handed on, or a line does not fit. Otherwise nothing
   * is returned: the hot path allocates no promise per line.
   */
  add(line: string | Buffer, mark?: Mark): Promise<void> | undefined {
    // Worst case 3 bytes per UTF-16 unit: only then is the exact length worth computing.
    const room = this.buf.length - this.used - 1;
    const text = typeof line === 'string';
    if ((text ? line.length * 3 : line.length) > room && (text ? Buffer.byteLength(line) : line.length) > room) {
      return this.addAfterCut(line, mark);
    }
    if (this.count > 0) this.buf[this.used++] = 0x0a;
    this.used += text ? this.buf.write(line, this.used) : line.copy(this.buf, this.used);
    this.count++;
    if (mark) this.marks.set(mark.stream, mark);
    if (this.count >= this.limits.maxEvents || this.used >= this.limits.maxBytes) return this.cut();
    this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.limits.timeoutMs);
    return undefined;
  }

  /** A line that does not fit the batch: the batch goes first; a line larger than any batch gets its own. */
  private async addAfterCut(line: string | Buffer, mark?: Mark): Promise<void> {
    if (this.count > 0) await this.cut();
    const size = typeof line === 'string' ? Buffer.byteLength(line) : line.length;
    if (size + 1 > this.buf.length) {
      this.pool.give(this.buf);
      this.buf = this.pool.take(size + 1);
    }
    await this.add(line, mark);
  }

  private async cut(): Promise<void> {
    void this.flush().catch(() => undefined); // its failure surfaces through the next add or flush
    // Hand-overs overlap the gathering of the next batches (a queue append waits for its fsync), up to
    // MAX_HANDING batches; beyond that the caller waits, which is the backpressure.
    while (this.handing.length > MAX_HANDING) await this.handing[0];
  }

  /** Hands on what is gathered now (also used on shutdown). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.count === 0) return this.flushing;
    const batch = this.buf.subarray(0, this.used);
    const count = this.count;
    const marks = [...this.marks.values()];
    this.buf = this.pool.take(this.capacity);
    this.used = 0;
    this.count = 0;
    this.marks = new Map();
    const encoded = this.encode ? this.encode(batch) : Promise.resolve(batch);
    const done = this.flushing.then(async () => this.handOn(await encoded, count, marks));
    // The memory goes back only when neither the encoder nor the hand-over can still be reading it.
    void Promise.allSettled([encoded, done]).then(() => this.pool.give(batch));
    this.flushing = done;
    this.handing.push(done);
    void done.finally(() => this.handing.splice(this.handing.indexOf(done), 1)).catch(() => undefined);
    return done;
  }
}
