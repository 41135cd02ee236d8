/**
 * What the agent has been doing, in its log: a `summary` line at most once a minute while data flows
 * (events in per source, out per sink over the last interval, and each sink's queue), and a `stopped` line
 * at the end with the counts since the start. Read from the same rows as `GET /components`.
 */
import type { Logger } from 'pino';
import type { ComponentStats } from './component-stats.js';

/** The fields of one line: `in.<source>`, `out.<sink>`, `queued.<sink>` (batches), flat for the text log. */
function fields(rows: ComponentStats[], before?: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) {
    if (r.kind === 'source') out[`in.${r.name}`] = r.eventsIn - (before?.get(`in.${r.name}`) ?? 0);
    else if (r.kind === 'sink') {
      out[`out.${r.name}`] = r.eventsOut - (before?.get(`out.${r.name}`) ?? 0);
      out[`queued.${r.name}`] = r.queueBatches ?? 0;
    }
  }
  return out;
}

/** The running totals a later interval is measured from. */
function totals(rows: ComponentStats[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of rows) {
    if (r.kind === 'source') m.set(`in.${r.name}`, r.eventsIn);
    else if (r.kind === 'sink') m.set(`out.${r.name}`, r.eventsOut);
  }
  return m;
}

export class ActivitySummary {
  private last: Map<string, number>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rows: () => ComponentStats[],
    private readonly log: Logger,
    private readonly intervalMs = 60_000,
  ) {
    this.last = totals(rows());
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** One interval: a line when any event came in or went out since the last. */
  tick(): void {
    const rows = this.rows();
    const delta = fields(rows, this.last);
    this.last = totals(rows);
    const moved = Object.entries(delta).some(([k, v]) => !k.startsWith('queued.') && v !== 0);
    if (moved) this.log.info({ seconds: Math.round(this.intervalMs / 1000), ...delta }, 'summary');
  }

  /** The last line: the counts since the process started (counters outlive reloads). */
  stopped(delivered: boolean): void {
    clearInterval(this.timer);
    this.log.info({ delivered, ...fields(this.rows()) }, 'stopped');
  }
}
