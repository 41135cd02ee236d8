/**
 * Events the service records about itself (monitor runs, the audit trail), each kind in a dataset of its
 * own so it can be queried with APL like any data. Records are buffered and written in batches: a thousand
 * records a minute would otherwise be a thousand small ingests. A batch that cannot be written is logged
 * as an error with its size, and counted: /health and /metrics show it.
 */
import { unlink, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { DatabaseReopening } from './db.js';
import type { EventStore, ReadOptions, StoredEvent } from './event-store.js';

const FLUSH_MS = 2000;
const FLUSH_RECORDS = 500;
/** While the database reopens (see db.ts), a batch is tried again this often, up to this many times. */
const REOPEN_RETRY_MS = 1000;
const MAX_REOPEN_RETRIES = 60;

export interface EventLogOptions {
  /** The dataset's description, when the log creates it. */
  description: string;
  /** What a record is, for the error logged when a batch cannot be written ("monitor runs"). */
  what: string;
  /**
   * A system dataset: kept by the service itself. Its name (in any case) is reserved, it may take the
   * reserved "axiom-" prefix, and no token writes or changes it.
   */
  system?: boolean;
}

export class EventLog<T extends object> {
  private buffer: T[] = [];
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  /** Batches tried again in a row while the database reopens. */
  private retries = 0;
  /** Records that could not be written, and why the last batch was not. */
  failedRecords = 0;
  lastFailure: { at: string; error: string } | undefined;

  constructor(
    private readonly store: EventStore,
    readonly dataset: string,
    private readonly opts: EventLogOptions,
    private readonly log: Logger,
  ) {
    if (opts.system) store.reserveSystemDataset(dataset);
  }

  /** Recorded events by time (none before the dataset exists); what is still buffered is not among them. */
  async read(o: ReadOptions): Promise<StoredEvent[]> {
    return this.store.hasDataset(this.dataset) ? this.store.readEvents(this.dataset, o) : [];
  }

  add(r: T): void {
    this.buffer.push(r);
    if (this.buffer.length >= FLUSH_RECORDS) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /**
   * Writes what is buffered; resolves once it is in the store, or, while the database reopens, once it is
   * buffered again to be tried after it.
   */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length) this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  /**
   * Creates the dataset if it is missing: at start, so that it can be queried (empty) before its first
   * record, and again before each batch, in case it was deleted meanwhile.
   */
  async ensureDataset(): Promise<void> {
    if (this.store.hasDataset(this.dataset)) return;
    await this.store
      .createDataset({ name: this.dataset, description: this.opts.description, who: 'ferry', system: this.opts.system })
      .catch((e: unknown) => {
        if (!this.store.hasDataset(this.dataset)) throw e;
      });
  }

  private async write(batch: T[]): Promise<void> {
    const file = this.store.tempFile('ndjson');
    try {
      await this.ensureDataset();
      await writeFile(file, batch.map((r) => JSON.stringify(r)).join('\n'));
      await this.store.ingestFile(this.dataset, file, 'ndjson');
      this.retries = 0;
    } catch (e) {
      // The database is being reopened: the batch waits for it rather than being lost.
      if (e instanceof DatabaseReopening && this.retries < MAX_REOPEN_RETRIES) {
        this.retries++;
        this.buffer.unshift(...batch);
        this.timer ??= setTimeout(() => void this.flush(), REOPEN_RETRY_MS);
        return;
      }
      this.failedRecords += batch.length;
      this.lastFailure = { at: new Date().toISOString(), error: (e as Error).message };
      this.log.error({ err: e, dataset: this.dataset, records: batch.length }, `could not record ${this.opts.what}`);
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }
}
