/**
 * The `local` sink: writes batches into the embedded service's store in the same process, with the same
 * rule as HTTP ingest: a batch counts as delivered once DuckDB has it in its write-ahead log.
 */
import { rm, writeFile } from 'node:fs/promises';
import type { EventStore, IngestOptions } from '../../service/store/event-store.js';
import type { DeadLetterFile } from './dead-letter.js';
import { decode } from './encoding.js';
import { newSinkCounters, type Sink, type SinkCounters, type SinkSpec } from './sink.js';
import { SinkHealth } from './sink-health.js';

export class LocalSink implements Sink {
  readonly counters: SinkCounters;
  readonly health: SinkHealth;

  /** @param options time field and format, and labels, applied as on HTTP ingest */
  constructor(
    private readonly store: EventStore, private readonly dataset: string, private readonly deadLetter: DeadLetterFile,
    private readonly options: IngestOptions = {}, private readonly name = 'local',
    shared: { counters?: SinkCounters; health?: SinkHealth } = {},
  ) {
    this.counters = shared.counters ?? newSinkCounters();
    this.health = shared.health ?? new SinkHealth(name, () => undefined);
  }

  get deadLetterPath(): string {
    return this.deadLetter.path;
  }

  async send(queued: Buffer): Promise<void> {
    // A batch queued compressed while this sink was an `axiom` one is still delivered.
    const batch = decode(queued);
    const file = this.store.tempFile('ndjson');
    await writeFile(file, batch);
    try {
      const r = await this.store.ingestFile(this.dataset, file, 'ndjson', this.options);
      this.counters.eventsOut += r.ingested;
      this.counters.bytesOut += batch.length;
      this.counters.deadLettered += r.failed;
      if (r.failures.length > 0) {
        const time = new Date().toISOString();
        await this.deadLetter.write(r.failures.map((f) => ({ time, sink: this.name, status: 200, error: f.error })));
        this.health.deadLettered(r.failed, `failed at ingest: ${r.failures[0]!.error}`, this.deadLetter.path);
      }
    } finally {
      await rm(file, { force: true });
    }
  }

  async close(): Promise<void> {
    // Nothing to cut short: a local write either commits or fails at once.
  }
}

export const localSink: SinkSpec<undefined> = {
  type: 'local',
  summary: 'the embedded service\'s store, in the same process (needs `service.enabled`)',
  options: {},
  needsService: true,
  configure: () => undefined,
  async create(_s, ctx) {
    const store = ctx.store!;
    // As with `ferry pipe --local`: the host's own store has nobody to create datasets for it.
    if (!store.hasDataset(ctx.dataset)) await store.createDataset({ name: ctx.dataset, who: `agent sink ${ctx.name}` });
    return new LocalSink(store, ctx.dataset, ctx.deadLetter, { timestampField: ctx.timestampField, timestampFormat: ctx.timestampFormat, labels: ctx.labels }, ctx.name,
      { counters: ctx.counters, health: ctx.health });
  },
};
