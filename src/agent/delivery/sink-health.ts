/**
 * How a sink is doing, said loudly: what stops data from flowing is logged at once with its cause, then
 * summarised at most once per `repeatMs` while it lasts, and is visible in /health and the metrics.
 *
 * - `retrying`: the receiver is unreachable, failing (5xx) or throttling (429); delivery goes on trying.
 * - `refused`: the receiver refuses the token (401, 403) or does not know the dataset (404); the queue
 *   is held (nothing is dead-lettered) until a retry goes through, e.g. after the config is fixed and
 *   reloaded with SIGHUP.
 * - `failed`: delivery stopped (an error no retry can fix, or the attempt limit); the queue keeps the data
 *   for the next start.
 *
 * Apart from the state, `queueError` says that the sink's queue cannot record deliveries (its disk): data
 * still flows, but delivered batches are not let go (they are sent again after a restart) and the queue's
 * disk use grows, so the agent is degraded until a record succeeds.
 */
import { STATUS_CODES } from 'node:http';
import type { Trouble } from '../sinks/sink.js';

export type SinkState = 'ok' | 'retrying' | 'refused' | 'failed';

/** Where the sink's news goes: the daemon's log, or `ferry pipe`'s standard error. */
export type HealthReporter = (level: 'error' | 'warn' | 'info', msg: string, context: Record<string, unknown>) => void;

/** "401 Unauthorized: invalid token": the status with its reason phrase, and the receiver's own words. */
export function statusText(status: number, message?: string): string {
  const phrase = STATUS_CODES[status];
  const head = phrase ? `${status} ${phrase}` : `HTTP ${status}`;
  return message && message !== phrase && message !== `HTTP ${status}` ? `${head}: ${message}` : head;
}

/** One line saying what went wrong: `receiver unreachable: connect ECONNREFUSED 127.0.0.1:9`. */
export function describeTrouble(t: Trouble): string {
  const what = t.status === undefined ? t.message : statusText(t.status, t.message);
  switch (t.kind) {
    case 'unreachable':
      return `receiver unreachable: ${what}`;
    case 'failing':
      return `receiver failing: ${what}`;
    case 'throttled':
      return `receiver throttling: ${what}`;
    case 'refused':
      return `refused: ${what}`;
  }
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${Math.round(s / 3600)}h`;
}

export class SinkHealth {
  state: SinkState = 'ok';
  /** The current trouble, in one line (kept after recovery as the last error seen). */
  lastError: string | undefined;
  /** When the current trouble began (epoch ms). */
  since: number | undefined;
  /** Failed attempts since the trouble began. */
  failures = 0;
  /** The reason of the first events dead-lettered in this run. */
  firstRefusal: string | undefined;
  /** Why the queue cannot record deliveries now, while it cannot. */
  queueError: string | undefined;
  /** Deliveries the queue could not record, in this run. */
  queueAckFailures = 0;
  private lastReport = 0;

  constructor(
    readonly sink: string,
    private readonly report: HealthReporter,
    private readonly repeatMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** An attempt failed and will be tried again (`attempt` of `maxAttempts`, 0 = no limit). */
  failed(t: Trouble, attempt: number, maxAttempts: number): void {
    // Delivery stopped: what a batch still in flight meets says nothing new about the sink.
    if (this.state === 'failed') return;
    const now = this.now();
    const line = describeTrouble(t);
    const state: SinkState = t.kind === 'refused' ? 'refused' : 'retrying';
    const first = this.state !== state;
    if (this.state === 'ok') this.since = now;
    this.state = state;
    this.lastError = line;
    this.failures++;
    if (!first && now - this.lastReport < this.repeatMs) return;
    this.lastReport = now;
    const context = {
      sink: this.sink,
      ...(t.status !== undefined ? { status: t.status } : {}),
      error: t.message,
      attempt,
      since: new Date(this.since!).toISOString(),
    };
    const retrying = `retrying (${attempt}/${maxAttempts || '∞'})`;
    if (state === 'refused') {
      this.report(
        'error',
        first
          ? `${line}; the queue is held, nothing is dropped: fix the token or dataset and reload (SIGHUP); ${retrying}`
          : `still ${line} for ${duration(now - this.since!)} (${this.failures} attempts); the queue is held`,
        context,
      );
    } else {
      this.report(
        'warn',
        first
          ? `${line}, ${retrying}`
          : `still ${line} for ${duration(now - this.since!)} (${this.failures} attempts), ${retrying}`,
        context,
      );
    }
  }

  /** A batch went through. */
  delivered(): void {
    // Once delivery stopped, a batch that was in flight going through does not start it again.
    if (this.state === 'ok' || this.state === 'failed') return;
    const was = this.state;
    const since = this.since ?? this.now();
    this.report('info', `delivering again after ${duration(this.now() - since)} (${this.failures} failed attempts)`, {
      sink: this.sink,
      was,
      lastError: this.lastError,
    });
    this.state = 'ok';
    this.since = undefined;
    this.failures = 0;
    this.lastReport = 0;
  }

  /** Events refused for good and written to the dead-letter file: said every time, with the first reason. */
  deadLettered(count: number, reason: string, file: string, status?: number): void {
    this.lastError = `${count} event(s) refused: ${reason}`;
    this.firstRefusal ??= reason;
    this.report('warn', `${count} event(s) refused by the receiver and written to ${file}: ${reason}`, {
      sink: this.sink,
      events: count,
      file,
      reason,
      ...(status !== undefined ? { status } : {}),
    });
  }

  /** The queue could not record a delivery: said once while it lasts (`queueDir`: where it is). */
  ackFailed(err: unknown, queueDir: string): void {
    this.queueAckFailures++;
    if (this.queueError !== undefined) return;
    this.queueError = err instanceof Error ? err.message : String(err);
    this.report(
      'error',
      `sink ${this.sink}: delivered batches could not be recorded in its queue at ${queueDir} (${this.queueError}); they are sent again after a restart`,
      { sink: this.sink, err },
    );
  }

  /** The queue recorded a delivery: after a failure, said once. */
  ackRecorded(): void {
    if (this.queueError === undefined) return;
    this.report('info', `sink ${this.sink}: its queue records deliveries again`, {
      sink: this.sink,
      failedRecords: this.queueAckFailures,
      lastError: this.queueError,
    });
    this.queueError = undefined;
  }

  /** Delivery stopped: the queue keeps what it holds for the next start. */
  gaveUp(err: unknown): void {
    this.state = 'failed';
    this.since ??= this.now();
    this.lastError = err instanceof Error ? err.message : String(err);
    this.report('error', `stopped delivering: ${this.lastError}; the queue keeps the data for the next start`, {
      sink: this.sink,
      stopped: true,
    });
  }
}
