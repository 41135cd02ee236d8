/**
 * Groups serialised events into batches by count, by bytes and by time, whichever comes first, and hands
 * each batch on (to the disk queue). add() waits while batches are being handed on, so a full queue slows
 * the sources down instead of growing memory.
 *
 * A batch gathers in stages of STAGE_BYTES. With an encoder (a compressing sink), each stage is compressed
 * as soon as it is full, while the next one fills: gzip members and zstd frames concatenate into one body
 * that decompresses to the whole batch, so the batch is never held uncompressed in full, and stages
 * compress beside the event loop, on libuv's threads. Without one, the stages are the batch and are handed on
 * as they are.
 */
import { BufferPool } from '../queue/buffer-pool.js';
import type { IngestParams } from '../../ingest/request.js';
import type { Destination } from '../sinks/sink.js';
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
  /** The copy of the stream's lines it stands for (SourceLine.route). */
  route?: number;
}

/**
 * The size of a stage. Each compressed stage restarts the compressor's dictionary, which costs a little
 * ratio; smaller stages lower the agent's peak memory at the same throughput (docs/benchmarks.md).
 */
export const STAGE_BYTES = 512 * 1024;

/**
 * Stages being compressed at once: as many as the machine's cores can work on beside the event loop, and
 * each costs a stage of resident memory.
 */
const MAX_ENCODING = 3;

/** Batches being handed on (queued: an append waits for its fsync) while the next one gathers. */
const MAX_HANDING = 2;

/**
 * Compressed parts are copied into reused memory as soon as they are made, in these steps. The
 * compressor's own output then dies young, at the next scavenge; kept until the batch is queued (an
 * fsync later) it would be promoted and freed only by a full collection, and meanwhile fragment the C heap.
 */
const OUT_STEP = 64 * 1024;

/** A stage of the batch being gathered, once full: its encoding, and whether its memory went back. */
interface Part {
  out: Promise<Buffer>;
  stage: Buffer;
  given: boolean;
  /** The encoded part in memory from outPool, given back after the hand-over. */
  kept?: Buffer;
}

export class Batcher {
  /**
   * The stage being filled, already as NDJSON bytes: each line is encoded into it as it comes, so line
   * strings die young (cheap for the garbage collector) and a full batch needs no join.
   */
  private stage: Buffer;
  private used = 0;
  /** Full stages of the batch being gathered, in order, and their bytes. */
  private parts: Part[] = [];
  private sealed = 0;
  private count = 0;
  /** The last mark of each stream in the batch being gathered (offsets only grow within a stream). */
  /** Keyed by stream, or by stream and route for one of several copies of a stream's lines. */
  /** The last mark of each stream in the batch, and of each copy of a stream whose lines take several paths. */
  private marks = new Map<Mark['stream'], Mark>();
  private routedMarks = new Map<Mark['stream'], Map<number, Mark>>();
  private timer: NodeJS.Timeout | undefined;
  /** The destination of the batch being gathered (undefined dataset: the sink's own). */
  private dataset: string | undefined;
  private params: IngestParams | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly handing: Promise<void>[] = [];
  private encoding = 0;
  private readonly encodeWaiters: (() => void)[] = [];
  private readonly stageBytes: number;
  /** Stages whose bytes were encoded or handed on: later stages fill them again. */
  private readonly pool: BufferPool;
  /** Memory for encoded parts: a few per batch for the batches being handed on. */
  private readonly outPool = new BufferPool(8 * (MAX_HANDING + 2));

  /**
   * @param handOn takes each batch, one after another in order, as its body in pieces (to be written one
   *   after another); their memory may be reused once the returned promise settles, so handOn must not
   *   keep them beyond that.
   * @param encode compresses a stage into a self-contained member of the body (a gzip member, a zstd
   *   frame); it may return the stage itself (no compression).
   */
  constructor(
    private readonly limits: BatchLimits,
    private readonly handOn: (batch: Buffer[], count: number, marks: Mark[], to?: Destination) => Promise<void>,
    private readonly encode?: (stage: Buffer) => Promise<Buffer>,
  ) {
    this.stageBytes = Math.min(STAGE_BYTES, limits.maxBytes + 1024);
    // Compressed, a stage comes back as soon as it is encoded; raw, only with its batch.
    this.pool = new BufferPool(
      encode ? MAX_ENCODING + 1 : (Math.ceil(limits.maxBytes / this.stageBytes) + 1) * (MAX_HANDING + 2),
    );
    this.stage = this.pool.take(this.stageBytes);
  }

  /**
   * Adds a line, or a run of `lines` lines (bytes joined by their newlines, `mark` just past the last one's).
   * A full batch is handed on while the next one gathers; the caller must wait (a promise is returned) only
   * once MAX_HANDING batches are being handed on, MAX_ENCODING stages are compressing, or a line does not
   * fit the stage. Otherwise nothing is returned: the hot path allocates no promise per line.
   */
  add(
    line: string | Buffer,
    mark?: Mark,
    dataset?: string,
    params?: IngestParams,
    lines = 1,
  ): Promise<void> | undefined {
    // A batch holds one destination's events: another cuts it, so batches stay in the order of the lines.
    // Parameters are compared as objects: a source hands the same object for the same parameters.
    if ((dataset !== this.dataset || params !== this.params) && this.count > 0) {
      // cut() hands the batch on before its first await: the line starts the next batch at once.
      const cutting = this.cut();
      this.dataset = dataset;
      this.params = params;
      const added = this.place(line, mark, dataset, params, lines);
      return added ? Promise.all([cutting, added]).then(() => undefined) : cutting;
    }
    this.dataset = dataset;
    this.params = params;
    return this.place(line, mark, dataset, params, lines);
  }

  /**
   * A run goes in whole when the batch would not be cut inside it; otherwise its lines up to the cut go in
   * (the batch is then cut as it would be line by line: at max_events, or after the line that reaches
   * max_bytes), and the rest starts the next batch, so batches are the same as if its lines came one by one.
   */
  private place(
    line: string | Buffer,
    mark: Mark | undefined,
    dataset: string | undefined,
    params: IngestParams | undefined,
    lines: number,
  ): Promise<void> | undefined {
    const cut = lines > 1 && typeof line !== 'string' ? this.cutInRun(line, lines) : undefined;
    if (!cut) return this.addLine(line, mark, dataset, params, lines);
    const run = line as Buffer;
    // The first part's lines are durable once its batch is: its mark ends at its last newline in the stream.
    const upTo: Mark | undefined = mark && {
      stream: mark.stream,
      offset: mark.offset - (run.length - cut.at),
      generation: mark.generation,
      ...(mark.route !== undefined ? { route: mark.route } : {}),
    };
    const rest = () => this.add(run.subarray(cut.at + 1), mark, dataset, params, lines - cut.lines);
    const added = this.addLine(run.subarray(0, cut.at), upTo, dataset, params, cut.lines);
    return added ? added.then(rest) : rest();
  }

  /**
   * Where in a run the batch would be cut, line by line: the newline after its last line in the batch, and
   * how many lines come before it. Undefined when the run ends before the cut (or at it).
   */
  private cutInRun(run: Buffer, lines: number): { at: number; lines: number } | undefined {
    const { maxEvents, maxBytes } = this.limits;
    // The batch's bytes before the run, with the newline that would come before its first line.
    const before = this.sealed + this.used + (this.count > 0 ? 1 : 0);
    if (this.count + lines - 1 < maxEvents && before + run.length < maxBytes) return undefined;
    let at = -1;
    for (let k = 1; k < lines; k++) {
      at = run.indexOf(0x0a, at + 1);
      if (this.count + k >= maxEvents || before + at >= maxBytes) return { at, lines: k };
    }
    return undefined;
  }

  private addLine(
    line: string | Buffer,
    mark: Mark | undefined,
    dataset: string | undefined,
    params: IngestParams | undefined,
    lines = 1,
  ): Promise<void> | undefined {
    // Worst case 3 bytes per UTF-16 unit: only then is the exact length worth computing.
    const room = this.stage.length - this.used - 1;
    const text = typeof line === 'string';
    if ((text ? line.length * 3 : line.length) > room && (text ? Buffer.byteLength(line) : line.length) > room) {
      return this.addToNextStage(line, mark, dataset, params, lines);
    }
    if (this.count > 0) this.stage[this.used++] = 0x0a;
    if (text) this.used += this.stage.write(line, this.used);
    else {
      // TypedArray's set, not Buffer's copy: that makes a view of the line for every copy.
      this.stage.set(line, this.used);
      this.used += line.length;
    }
    return this.added(mark, lines);
  }

  /**
   * Takes the place of a line that ships nothing (its event was dropped by a transform): its mark goes with
   * the batch being gathered, so it is acknowledged in order, after every line before it is durable. A batch
   * of such places alone is handed on like any other, and queues nothing.
   */
  mark(mark: Mark): void {
    this.keep(mark);
    this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.limits.timeoutMs);
  }

  /** Keyed by stream and route without making a key per line: marks come once per line. */
  private keep(mark: Mark): void {
    if (!mark.route) {
      this.marks.set(mark.stream, mark);
      return;
    }
    let byRoute = this.routedMarks.get(mark.stream);
    if (!byRoute) this.routedMarks.set(mark.stream, (byRoute = new Map()));
    byRoute.set(mark.route, mark);
  }

  private added(mark: Mark | undefined, lines = 1): Promise<void> | undefined {
    this.count += lines;
    if (mark) this.keep(mark);
    if (this.count >= this.limits.maxEvents || this.sealed + this.used >= this.limits.maxBytes) return this.cut();
    this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.limits.timeoutMs);
    return undefined;
  }

  /**
   * A line that does not fit the stage: the stage is sealed first; a line larger than a stage is a part of
   * its own. Other callers (sources feeding the same sink) may add lines while this one waits for an
   * encoding slot, so everything after the wait happens without another await until the line is counted.
   */
  private async addToNextStage(
    line: string | Buffer,
    mark: Mark | undefined,
    dataset: string | undefined,
    params: IngestParams | undefined,
    lines: number,
  ): Promise<void> {
    if (this.used > 0) this.seal();
    await this.encodeSlot();
    // Lines for elsewhere may have come meanwhile: the line goes into a batch of its own destination.
    if (dataset !== this.dataset || params !== this.params) return this.add(line, mark, dataset, params, lines);
    const size = typeof line === 'string' ? Buffer.byteLength(line) : line.length;
    // Placed again: lines may have come into the new stage and the batch meanwhile (a run that the batch
    // must now be cut inside is split first, even one larger than a stage).
    if (size + 1 <= this.stage.length || (lines > 1 && this.cutInRun(line as Buffer, lines)))
      return this.place(line, mark, dataset, params, lines);
    // Its own memory, not a pooled stage's: lines this long are rare, and it is let go once handed on.
    const own = Buffer.allocUnsafeSlow(size + 1);
    let at = 0;
    if (this.count > 0) own[at++] = 0x0a;
    at += typeof line === 'string' ? own.write(line, at) : line.copy(own, at);
    if (this.used > 0) this.seal();
    this.seal(own.subarray(0, at));
    return this.added(mark, lines);
  }

  /** Ends the stage being filled, or adds `own` (a part not from the pool), and starts encoding it. */
  private seal(own?: Buffer): void {
    let stage: Buffer;
    if (own) {
      stage = own;
    } else {
      stage = this.stage.subarray(0, this.used);
      this.stage = this.pool.take(this.stageBytes);
      this.used = 0;
    }
    this.sealed += stage.length;
    const part: Part = { out: Promise.resolve(stage), stage, given: own !== undefined };
    if (this.encode) {
      this.encoding++;
      part.out = this.encode(stage).then((out) => {
        if (out.buffer === stage.buffer) return out; // not compressed: the stage is the part
        // Compressed into memory of its own: the stage can fill again at once.
        this.giveBack(part);
        const kept = this.outPool.take(Math.ceil(out.length / OUT_STEP) * OUT_STEP).subarray(0, out.length);
        out.copy(kept);
        part.kept = kept;
        return kept;
      });
      void part.out
        .catch(() => undefined)
        .finally(() => {
          this.encoding--;
          this.encodeWaiters.splice(0).forEach((wake) => wake());
        });
    }
    this.parts.push(part);
  }

  /** Waits while MAX_ENCODING stages are being compressed: the memory of stages is bounded. */
  private async encodeSlot(): Promise<void> {
    while (this.encoding >= MAX_ENCODING) await new Promise<void>((r) => this.encodeWaiters.push(r));
  }

  private giveBack(part: Part): void {
    if (part.given) return;
    part.given = true;
    this.pool.give(part.stage);
  }

  /** After the hand-over: the part's memory, raw and encoded, is free for later batches. */
  private release(part: Part): void {
    this.giveBack(part);
    if (part.kept) this.outPool.give(part.kept);
    part.kept = undefined;
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
    if (this.count === 0 && this.marks.size === 0 && this.routedMarks.size === 0) return this.flushing;
    if (this.used > 0) this.seal();
    const parts = this.parts;
    const count = this.count;
    const marks = [...this.marks.values()];
    for (const byRoute of this.routedMarks.values()) marks.push(...byRoute.values());
    const to: Destination | undefined =
      this.dataset === undefined
        ? undefined
        : { dataset: this.dataset, ...(this.params ? { params: this.params } : {}) };
    this.parts = [];
    this.sealed = 0;
    this.count = 0;
    this.marks = new Map();
    this.routedMarks = new Map();
    const done = this.flushing.then(async () =>
      this.handOn(await Promise.all(parts.map((p) => p.out)), count, marks, to),
    );
    // Stages not given back yet (raw, or still encoding) go back once nothing can read them any more.
    void Promise.allSettled([done, ...parts.map((p) => p.out)]).then(() => parts.forEach((p) => this.release(p)));
    this.flushing = done;
    this.handing.push(done);
    void done.finally(() => this.handing.splice(this.handing.indexOf(done), 1)).catch(() => undefined);
    return done;
  }
}
