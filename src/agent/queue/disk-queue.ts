/**
 * The queue between batching and a sink: a SegmentLog with a size cap. When full, `block` (the default)
 * makes push() wait until deliveries free space, so backpressure reaches the sources and the files stay
 * the buffer; `drop_newest` refuses the new batch and counts it.
 */
import { BufferPool } from './buffer-pool.js';
import {
  comparePositions,
  payloadSize,
  SegmentLog,
  type LogPosition,
  type LogRecord,
  type Payload,
} from './segment-log.js';

export type WhenFull = 'block' | 'drop_newest';

export interface DiskQueueOptions {
  maxBytes: number;
  whenFull?: WhenFull;
  segmentBytes?: number;
  /** Batches read and not yet released at once (the sink's concurrency); by default 1. */
  readers?: number;
}

/** Read buffers are made in steps of this: a spare then serves the next batch, a little larger or smaller. */
const READ_STEP = 256 * 1024;

/**
 * The most read buffers kept, whatever the concurrency: a sink with many batches in flight makes the
 * others afresh rather than keep a backlog's worth of batches for good.
 */
const MAX_READ_SPARES = 4;

export class DiskQueue {
  /** Batches refused because the queue was full (drop_newest). */
  dropped = 0;
  private waiters: (() => void)[] = [];
  private readers: (() => void)[] = [];
  /** Record sizes from the acknowledged position on, to know the depth without stat calls. */
  private readonly sizes: { next: LogPosition; bytes: number }[] = [];
  private bytes: number;

  /**
   * Memory that records are read into, handed back through release() once delivered. It keeps a buffer for
   * every batch that can be in flight and one more (up to MAX_READ_SPARES): with fewer, buffers given back
   * while others are out are dropped and made again, and a batch of megabytes waits for the collector each
   * time (at the peak, docs/benchmarks.md).
   */
  private readonly readPool: BufferPool;
  private readonly take = (size: number) => this.readPool.take(size);

  private constructor(
    private readonly log: SegmentLog,
    private readonly o: DiskQueueOptions,
    pending: { next: LogPosition; bytes: number }[],
  ) {
    this.readPool = new BufferPool(Math.min((o.readers ?? 1) + 1, MAX_READ_SPARES), READ_STEP);
    this.sizes.push(...pending);
    this.bytes = this.sizes.reduce((a, s) => a + s.bytes, 0);
  }

  static async open(dir: string, o: DiskQueueOptions): Promise<DiskQueue> {
    const log = await SegmentLog.open(dir, { segmentBytes: o.segmentBytes });
    // What a previous run left undelivered counts against the cap from the start.
    return new DiskQueue(log, o, await log.recordSizes());
  }

  get depthBytes(): number {
    return this.bytes;
  }

  get depthRecords(): number {
    return this.sizes.length;
  }

  /**
   * Appends a batch (whole or in pieces) once it fits, with the writer's tag for its record; resolves after
   * fsync. false: dropped (drop_newest, queue full).
   */
  async push(batch: Payload, tag = 0): Promise<boolean> {
    const size = payloadSize(batch) + 8;
    while (this.bytes > 0 && this.bytes + size > this.o.maxBytes) {
      if (this.o.whenFull === 'drop_newest') {
        this.dropped++;
        return false;
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
    this.bytes += size;
    const [next] = await this.log.append([batch], tag);
    this.sizes.push({ next: next!, bytes: size });
    this.readers.splice(0).forEach((r) => r());
    return true;
  }

  /** Up to `max` batches after `from`, waiting for one if there are none. */
  async next(max: number, from: LogPosition, signal?: { closed: boolean }): Promise<LogRecord[]> {
    for (;;) {
      const records = await this.log.read(max, from, this.take);
      if (records.length > 0 || signal?.closed) return records;
      await new Promise<void>((r) => {
        this.readers.push(r);
        setTimeout(r, 1000).unref();
      });
    }
  }

  /** Takes back the payload of a record from next() that nothing refers to any more. */
  release(payload: Buffer): void {
    this.readPool.give(payload);
  }

  get ackedPosition(): LogPosition {
    return this.log.ackedPosition;
  }

  /** Releases every batch before `upTo` (delivered); waiting pushes may proceed. */
  async ack(upTo: LogPosition): Promise<void> {
    try {
      await this.log.ack(upTo);
    } finally {
      // Delivered either way: a position that could not be written only means sending them again after a
      // restart, and their room is free now.
      while (this.sizes.length && comparePositions(this.sizes[0]!.next, upTo) <= 0)
        this.bytes -= this.sizes.shift()!.bytes;
      this.waiters.splice(0).forEach((w) => w());
    }
  }

  wakeReaders(): void {
    this.readers.splice(0).forEach((r) => r());
  }

  async close(): Promise<void> {
    this.wakeReaders();
    await this.log.close();
  }
}
