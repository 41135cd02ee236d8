/**
 * Everything in front of one sink: serialising events, batching, the sink's disk queue and the delivery
 * loop. A batch's lines are acknowledged to their sources as soon as the batch is in the queue (fsynced):
 * from then on the queue, not the file, is what keeps them.
 */
import { join } from 'node:path';
import { Batcher, type BatchLimits, type Mark } from './batcher.js';
import { Delivery } from './delivery.js';
import { DiskQueue, type WhenFull } from '../queue/disk-queue.js';
import type { SendChain } from './send-chain.js';
import type { Envelope } from '../transforms/transform.js';

export interface SinkRunnerOptions {
  name: string;
  batch: BatchLimits;
  queue: { maxBytes: number; whenFull: WhenFull };
  /** Directory holding the sink's queue (<agent data dir>/queues/<sink>): it outlives restarts and reloads. */
  queueDir: string;
  /** Batches in flight to the sink at once. */
  concurrency: number;
  onDurable: (mark: Mark) => void;
  /** Delivery stopped (the sink's health has said why). */
  onError: (err: unknown) => void;
  /** Counters that outlive this runner (across reloads). */
  counters?: RunnerCounters;
}

export interface RunnerCounters {
  eventsIn: number;
  bytesIn: number;
  droppedEvents: number;
}

export function newRunnerCounters(): RunnerCounters {
  return { eventsIn: 0, bytesIn: 0, droppedEvents: 0 };
}

/**
 * The line shipped for an envelope. A parsed JSON line goes as its own text, with enrichment fields spliced
 * in before the closing brace; another event is serialised; a line nobody parsed goes as it is when it
 * looks like a JSON object (passthrough: no parse, no re-serialisation, the receiver parses it), and as
 * `{"message": ...}` otherwise.
 */
export function lineOf(e: Envelope): string | Buffer {
  if (e.event) return e.event.line();
  if (e.raw) {
    const r = e.raw;
    if (r.length > 1 && r[0] === 0x7b && r[r.length - 1] === 0x7d) return r;
    return JSON.stringify({ message: r.toString('utf8') });
  }
  if (!e.truncated && e.text.charCodeAt(0) === 0x7b && e.text.charCodeAt(e.text.length - 1) === 0x7d) return e.text;
  return JSON.stringify(e.truncated ? { message: e.text, truncated: true } : { message: e.text });
}

export class SinkRunner {
  readonly counters: RunnerCounters;
  /** Delivery gave up (sink closed or attempt limit): the queue will not empty in this run. */
  private failed = false;
  private readonly batcher: Batcher;
  private readonly delivery: Delivery;

  private constructor(
    readonly o: SinkRunnerOptions,
    readonly sink: SendChain,
    readonly queue: DiskQueue,
  ) {
    this.counters = o.counters ?? newRunnerCounters();
    this.batcher = new Batcher(
      o.batch,
      async (batch, count, marks) => {
        const queued = await queue.push(batch);
        if (!queued) this.counters.droppedEvents += count;
        // Dropped (drop_newest) lines are given up on purpose and counted: the files need not keep them.
        for (const m of marks) o.onDurable(m);
      },
      sink.encode,
    );
    this.delivery = new Delivery(
      queue,
      sink,
      (err) => {
        this.failed = true;
        sink.health.gaveUp(err);
        o.onError(err);
      },
      o.concurrency,
    );
  }

  static async open(o: SinkRunnerOptions, sink: SendChain): Promise<SinkRunner> {
    const queue = await DiskQueue.open(join(o.queueDir), { maxBytes: o.queue.maxBytes, whenFull: o.queue.whenFull });
    const r = new SinkRunner(o, sink, queue);
    r.delivery.start();
    return r;
  }

  /** Takes an envelope; returns a promise only when the caller must wait (backpressure). */
  accept(e: Envelope): Promise<void> | undefined {
    const line = lineOf(e);
    this.counters.eventsIn++;
    this.counters.bytesIn += line.length + 1; // strings: UTF-16 units, exact for ASCII, and free
    return this.batcher.add(line, e);
  }

  /** Puts what is batched into the queue. */
  flush(): Promise<void> {
    return this.batcher.flush();
  }

  /**
   * Resolves when every queued batch is delivered, or at `deadline` (epoch ms), or when `giveUp` says so
   * (a sink held by a refusal when nobody will fix it), whichever is first.
   */
  async drain(deadline: number, giveUp: () => boolean = () => false): Promise<boolean> {
    while (this.queue.depthRecords > 0 && Date.now() < deadline && !this.failed && !giveUp())
      await new Promise((r) => setTimeout(r, 20));
    return this.queue.depthRecords === 0;
  }

  /** Cuts retries short and stops; what is still queued is delivered after the next start. */
  async stop(): Promise<void> {
    this.delivery.closing();
    await this.sink.close();
    await this.delivery.stop();
    await this.queue.close();
  }
}
