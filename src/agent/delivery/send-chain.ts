/**
 * What every sink's batches go through, around a sink that only sends: the same for all of them.
 *
 * - `retry`: tried again, forever by default (`maxAttempts` 0), after the receiver's own wait
 *   (Retry-After, X-RateLimit-Reset) or exponential backoff with full jitter up to a cap.
 * - `refused` for a setting the operator fixes (token, dataset): retried the same way with the queue held,
 *   so fixing the config and reloading loses nothing; `ferry pipe`, which cannot wait for that,
 *   dead-letters them instead (refusal `dead-letter`).
 * - `too-large`: split in two, each half sent on its own; a single event still too large is dead-lettered.
 * - `refused` otherwise: the batch's events go to the dead-letter file with the status and reason.
 * - `partly-refused`: delivered; the failed events go to the dead-letter file.
 * - PermanentSinkError (a request that cannot be made at all): delivery stops at once, the batch stays
 *   queued.
 * Every failure is said through the sink's health, which logs it and shows it in /health. A batch counts as
 * delivered only when send() resolves; the queue is acknowledged after that.
 */
import type { DeadLetterFile } from './dead-letter.js';
import { countLines, ndjson, splitLines } from './batch.js';
import { decode, encode, type Encoding } from './encoding.js';
import { backoffMs, DEFAULT_BACKOFF, type BackoffOptions } from '../../util/retry.js';
import type { Destination, SendOutcome, Sink, Trouble } from '../sinks/sink.js';
import { SinkHealth, statusText } from './sink-health.js';

/** What a sink delivered, retried and gave up on; they outlive the chain across reloads. */
export interface SinkCounters {
  eventsOut: number;
  bytesOut: number;
  retries: number;
  deadLettered: number;
}

export function newSinkCounters(): SinkCounters {
  return { eventsOut: 0, bytesOut: 0, retries: 0, deadLettered: 0 };
}

export interface SendChainOptions {
  name: string;
  deadLetter: DeadLetterFile;
  backoff?: BackoffOptions;
  /** 0: retry forever (the default: data is never dropped for a passing outage). */
  maxAttempts?: number;
  /** A refusal the operator can fix: `hold` the queue and retry (the default), or `dead-letter` it. */
  refusal?: 'hold' | 'dead-letter';
  /** Where failures are said; by default a health that tells nobody (tests). */
  health?: SinkHealth;
  /** Counters that outlive this chain (across reloads). */
  counters?: SinkCounters;
}

export class SendChain {
  readonly counters: SinkCounters;
  readonly health: SinkHealth;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(
    readonly sink: Sink,
    private readonly o: SendChainOptions,
  ) {
    this.counters = o.counters ?? newSinkCounters();
    this.health = o.health ?? new SinkHealth(o.name, () => undefined);
  }

  get deadLetterPath(): string {
    return this.o.deadLetter.path;
  }

  /** The encoding the sink wants its batches in. */
  get encoding(): Encoding {
    return this.sink.encoding ?? 'none';
  }

  /**
   * Delivers a queued batch, in `queuedAs`: resolves once every event is delivered or dead-lettered;
   * rejects when the chain is closed, the attempt limit is reached, or the sink cannot send at all (the
   * batch stays queued).
   */
  async send(queued: Buffer, queuedAs: Encoding, to?: Destination): Promise<void> {
    if (queued.length === 0) return;
    // NDJSON queued before the sink compressed (another config, a split half) is encoded now; a batch
    // compressed otherwise than a compressing sink's own way goes as it is (the receiver reads either);
    // a sink that takes NDJSON gets NDJSON.
    const encoding = queuedAs === 'none' || this.encoding === 'none' ? this.encoding : queuedAs;
    const batch =
      encoding === queuedAs ? queued : encoding === 'none' ? decode(queued, queuedAs) : await encode(queued, encoding);
    const outcome = await this.attempt(batch, encoding, to);
    switch (outcome.kind) {
      case 'delivered':
      case 'partly-refused': {
        // The receiver's counts spare decompressing the batch to count its lines.
        this.counters.eventsOut += outcome.events ?? countLines(decode(batch, encoding));
        this.counters.bytesOut += batch.length;
        if (outcome.kind === 'partly-refused' && outcome.failures.length > 0) {
          const time = new Date().toISOString();
          await this.o.deadLetter.write(
            outcome.failures.map((error) => ({
              time,
              sink: this.o.name,
              ...(to ? { dataset: to.dataset } : {}),
              status: 200,
              error,
            })),
          );
          this.counters.deadLettered += outcome.failures.length;
          this.health.deadLettered(
            outcome.failures.length,
            `failed at ingest: ${outcome.failures[0]!}`,
            this.o.deadLetter.path,
          );
        }
        return;
      }
      case 'too-large': {
        const lines = splitLines(decode(batch, encoding));
        if (lines.length === 1)
          return this.deadLetter(lines, 413, statusText(413, 'the receiver refused this event as too large'), to);
        const half = Math.ceil(lines.length / 2);
        await this.send(ndjson(lines.slice(0, half)), 'none', to);
        await this.send(ndjson(lines.slice(half)), 'none', to);
        return;
      }
      case 'refused':
        return this.deadLetter(
          splitLines(decode(batch, encoding)),
          outcome.status ?? 0,
          outcome.status === undefined ? outcome.reason : statusText(outcome.status, outcome.reason),
          to,
        );
    }
  }

  /** Sends until an outcome that is not worth retrying (or the attempt limit). */
  private async attempt(
    batch: Buffer,
    encoding: Encoding,
    to: Destination | undefined,
  ): Promise<Exclude<SendOutcome, { kind: 'retry' }>> {
    const hold = (this.o.refusal ?? 'hold') === 'hold';
    for (let attempt = 1; ; attempt++) {
      if (this.closed) throw new Error(`sink ${this.o.name} closed while delivering`);
      const outcome = await this.sink.send(batch, encoding, to);
      let trouble: Trouble;
      let waitMs: number | undefined;
      if (outcome.kind === 'retry') ({ trouble, waitMs } = outcome);
      else if (outcome.kind === 'refused' && outcome.config && hold && !appsDataset(outcome.status, to))
        trouble = { kind: 'refused', status: outcome.status, message: outcome.reason };
      else {
        if (outcome.kind === 'delivered' || outcome.kind === 'partly-refused') this.health.delivered();
        return outcome;
      }
      if (this.closed) throw new Error(`sink ${this.o.name} closed while delivering (${trouble.message})`);
      if (this.o.maxAttempts && attempt >= this.o.maxAttempts) {
        throw new Error(
          `giving up after ${attempt} attempts: ${trouble.status === undefined ? trouble.message : statusText(trouble.status, trouble.message)}`,
        );
      }
      this.health.failed(trouble, attempt, this.o.maxAttempts ?? 0);
      this.counters.retries++;
      await this.sleep(waitMs ?? backoffMs(attempt, this.o.backoff ?? DEFAULT_BACKOFF));
    }
  }

  private async deadLetter(lines: string[], status: number, error: string, to?: Destination): Promise<void> {
    await this.o.deadLetter.writeEvents(lines, this.o.name, status, error, to?.dataset);
    this.counters.deadLettered += lines.length;
    this.health.deadLettered(lines.length, error, this.o.deadLetter.path, status || undefined);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** Stops retrying (a send in progress rejects: its batch stays queued) and closes the sink. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake?.();
    await this.sink.close();
  }
}

/**
 * A dataset the receiver does not know (404) or the token may not write (403), named by an application
 * (a relayed request's, an OTLP export's): no setting of the operator's fixes it, and holding the queue for
 * it would hold every other application's events, so its batch is dead-lettered instead.
 */
function appsDataset(status: number | undefined, to: Destination | undefined): boolean {
  return to?.params !== undefined && !to.params.configured && (status === 403 || status === 404);
}
