/**
 * Delivery to one sink, composed in one place as the OpenTelemetry Collector's exporter helper composes
 * queue → retry → timeout:
 *
 *   envelope → line (lineOf) → Batcher (cut by count, size, time; encoded once, as the sink wants)
 *            → DiskQueue (fsynced; the record says the batch's encoding) → lines acknowledged to sources
 *            → SendLoop (in flight up to `concurrency`, acknowledged in order)
 *            → SendChain (retries with backoff, 413 splits, dead letters, health) → Sink (one attempt)
 *
 * A batch's lines are acknowledged to their sources as soon as the batch is in the queue: from then on the
 * queue, not the file, is what keeps them.
 */
import { join } from 'node:path';
import { DiskQueue } from '../queue/disk-queue.js';
import type { Sink } from '../sinks/sink.js';
import type { Envelope } from '../transforms/transform.js';
import { Batcher, type Mark } from './batcher.js';
import { DeadLetterFile } from './dead-letter.js';
import { encode } from './encoding.js';
import { queueRecord } from './record.js';
import { newSinkCounters, SendChain, type SinkCounters } from './send-chain.js';
import { SendLoop } from './send-loop.js';
import type { SinkSettings } from './settings.js';
import { SinkHealth, type HealthReporter } from './sink-health.js';

export interface DeliveryOptions {
  /** The sink's name in the config: metrics, health and log lines. */
  name: string;
  settings: Pick<SinkSettings, 'batch' | 'queue' | 'concurrency' | 'retry'>;
  /** Directory holding the sink's queue (<agent data dir>/queues/<sink>): it outlives restarts and reloads. */
  queueDir: string;
  deadLetterPath: string;
  /** A refusal the operator can fix: `hold` the queue and retry (the daemon), or `dead-letter` it (`ferry pipe`). */
  refusal?: 'hold' | 'dead-letter';
  /** Where failures are said; by default nobody (tests). */
  report?: HealthReporter;
  /** `queued` false: the queue was full and dropped the batch (drop_newest). */
  onDurable: (mark: Mark, queued: boolean) => void;
  /** Delivery stopped (the sink's health has said why). */
  onError: (err: unknown) => void;
  /** Counters that outlive this delivery (across reloads). */
  counters?: { delivery?: DeliveryCounters; sink?: SinkCounters };
}

/** What came in to be delivered, and what was dropped on purpose (drop_newest). */
export interface DeliveryCounters {
  eventsIn: number;
  bytesIn: number;
  droppedEvents: number;
}

export function newDeliveryCounters(): DeliveryCounters {
  return { eventsIn: 0, bytesIn: 0, droppedEvents: 0 };
}

/**
 * The line shipped for an envelope. A parsed JSON line goes as its own text, with enrichment fields spliced
 * in before the closing brace; another event is serialised; a line nobody parsed goes as it is when it
 * looks like a JSON object (passthrough: no parse, no re-serialisation, the receiver parses it), and as
 * `{"message": ...}` otherwise.
 */
export function lineOf(e: Envelope): string | Buffer {
  if (e.event) {
    try {
      return e.event.line();
    } catch (err) {
      // An event that cannot be written as JSON (fields nested past the stack's depth): its line goes as
      // it came, with why, rather than being lost.
      return JSON.stringify({ message: e.text || e.raw?.toString('utf8') || '', ferry_error: (err as Error).message });
    }
  }
  if (e.raw) {
    const r = e.raw;
    if (r.length > 1 && r[0] === 0x7b && r[r.length - 1] === 0x7d) return r;
    return JSON.stringify({ message: r.toString('utf8') });
  }
  if (!e.truncated && e.text.charCodeAt(0) === 0x7b && e.text.charCodeAt(e.text.length - 1) === 0x7d) return e.text;
  return JSON.stringify(e.truncated ? { message: e.text, truncated: true } : { message: e.text });
}

export class Delivery {
  readonly counters: DeliveryCounters;
  /** Delivery gave up (sink closed or attempt limit): the queue will not empty in this run. */
  private failed = false;
  private readonly batcher: Batcher;
  private readonly loop: SendLoop;

  private constructor(
    readonly o: DeliveryOptions,
    readonly chain: SendChain,
    readonly queue: DiskQueue,
  ) {
    this.counters = o.counters?.delivery ?? newDeliveryCounters();
    const encoding = chain.encoding;
    this.batcher = new Batcher(
      o.settings.batch,
      async (batch, count, marks, to) => {
        // Only the places of dropped events: nothing to queue, only lines to acknowledge.
        let queued = true;
        if (count > 0) {
          const { payload, tag } = queueRecord(batch, encoding, to);
          queued = await queue.push(payload, tag);
          if (!queued) this.counters.droppedEvents += count;
        }
        // Dropped (drop_newest) lines are given up on purpose and counted: the files need not keep them.
        for (const m of marks) o.onDurable(m, queued);
      },
      encoding === 'none' ? undefined : (stage) => encode(stage, encoding),
    );
    this.loop = new SendLoop(
      queue,
      chain,
      (err) => {
        this.failed = true;
        chain.health.gaveUp(err);
        o.onError(err);
      },
      o.settings.concurrency,
      (err) => (err === undefined ? chain.health.ackRecorded() : chain.health.ackFailed(err, o.queueDir)),
    );
  }

  /** Opens the sink's queue and starts delivering what it holds (from earlier runs too). */
  static async open(o: DeliveryOptions, sink: Sink): Promise<Delivery> {
    const chain = new SendChain(sink, {
      name: o.name,
      deadLetter: new DeadLetterFile(o.deadLetterPath),
      backoff: { initialMs: o.settings.retry.initialMs, maxMs: o.settings.retry.maxMs },
      maxAttempts: o.settings.retry.maxAttempts,
      refusal: o.refusal ?? 'hold',
      counters: o.counters?.sink ?? newSinkCounters(),
      health: new SinkHealth(o.name, o.report ?? (() => undefined)),
    });
    let queue: DiskQueue;
    try {
      queue = await DiskQueue.open(join(o.queueDir), {
        maxBytes: o.settings.queue.maxBytes,
        whenFull: o.settings.queue.whenFull,
        readers: o.settings.concurrency,
      });
    } catch (e) {
      await sink.close();
      throw e;
    }
    // Batches an earlier run (or the config before a reload) queued go first: said before they are sent,
    // at warn, so a stdin agent (which logs warnings only) says it too.
    if (queue.depthRecords > 0)
      o.report?.(
        'warn',
        `delivering ${queue.depthRecords} batch(es) (${Math.ceil(queue.depthBytes / 1024)} KiB compressed) queued before this start`,
        { sink: o.name, batches: queue.depthRecords, bytes: queue.depthBytes },
      );
    const d = new Delivery(o, chain, queue);
    d.loop.start();
    return d;
  }

  get health(): SinkHealth {
    return this.chain.health;
  }

  /** Takes an envelope; returns a promise only when the caller must wait (backpressure). */
  accept(e: Envelope): Promise<void> | undefined {
    if (e.dropped) {
      this.batcher.mark(e);
      return undefined;
    }
    const line = lineOf(e);
    const lines = e.lines ?? 1;
    this.counters.eventsIn += lines;
    // A run's newlines between its lines count as each line's own. Strings: UTF-16 units, exact for ASCII, and free.
    this.counters.bytesIn += line.length + 1;
    return this.batcher.add(line, e, e.dataset, e.params, lines);
  }

  /** Puts what is batched into the queue. */
  flush(): Promise<void> {
    return this.batcher.flush();
  }

  private handing: Promise<void> | undefined;
  private nextHanding: Promise<void> | undefined;

  /**
   * Puts what is batched into the queue now, for a source whose sender waits for it (the relay). Calls made
   * while a hand-over is under way join the next one, as appends share an fsync: concurrent senders share
   * batches instead of each cutting its own.
   */
  queueNow(): Promise<void> {
    if (!this.handing) {
      const run = this.batcher.flush().finally(() => {
        if (this.handing === run) this.handing = undefined;
      });
      this.handing = run;
      return run;
    }
    const again = () => {
      this.nextHanding = undefined;
      return this.queueNow();
    };
    this.nextHanding ??= this.handing.then(again, again);
    return this.nextHanding;
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
    this.loop.closing();
    await this.chain.close();
    await this.loop.stop();
    await this.queue.close();
  }
}
