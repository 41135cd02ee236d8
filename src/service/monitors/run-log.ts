/**
 * Every monitor run, recorded as an event in a dataset of its own (service.monitors.runs_dataset), so runs
 * can be queried with APL like any data. Records are buffered and written in batches: a thousand monitors
 * a minute would otherwise be a thousand small ingests.
 */
import { unlink, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { EventStore } from '../store/event-store.js';

export interface RunRecord {
  _time: string;
  monitorId: string;
  monitorName: string;
  type: string;
  queryStartTime: string;
  queryEndTime: string;
  /** How long after its tick the run started, and how long it took (ms). */
  delayMs: number;
  durationMs: number;
  /** normal, triggered (some group open), no data, or error. */
  state: string;
  value: number | null;
  rowsMatched: number;
  groups: number;
  opened: number;
  closed: number;
  notified: number;
  notificationsFailed: number;
  notificationError: string | null;
  /** MatchEvent: matching events past the notification caps. */
  suppressed: number;
  /** Ticks of this monitor passed over since its previous run in this process: the scheduler fell behind. */
  skippedTicks: number;
  error: string | null;
}

const FLUSH_MS = 2000;
const FLUSH_RECORDS = 500;

export class RunLog {
  private buffer: RunRecord[] = [];
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: EventStore,
    readonly dataset: string,
    private readonly log: Logger,
  ) {}

  add(r: RunRecord): void {
    this.buffer.push(r);
    if (this.buffer.length >= FLUSH_RECORDS) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is buffered; resolves once it is in the store. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length) this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(batch: RunRecord[]): Promise<void> {
    const file = this.store.tempFile('ndjson');
    try {
      if (!this.store.hasDataset(this.dataset)) {
        await this.store
          .createDataset({ name: this.dataset, description: 'Runs of monitors, one event per run', who: 'ferry' })
          .catch((e: unknown) => {
            if (!this.store.hasDataset(this.dataset)) throw e;
          });
      }
      await writeFile(file, batch.map((r) => JSON.stringify(r)).join('\n'));
      await this.store.ingestFile(this.dataset, file, 'ndjson');
    } catch (e) {
      this.log.error({ err: e, dataset: this.dataset, runs: batch.length }, 'could not record monitor runs');
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }
}
