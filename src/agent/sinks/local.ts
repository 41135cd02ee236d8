/**
 * The `local` sink: writes batches into the embedded service's store in the same process, with the same
 * rule as HTTP ingest: a batch counts as delivered once DuckDB has it in its write-ahead log.
 */
import { rm, writeFile } from 'node:fs/promises';
import type { EventStore, IngestOptions } from '../../service/store/event-store.js';
import type { DeadLetterFile } from './dead-letter.js';

export class LocalSink {
  eventsOut = 0;

  /** @param options time field and format, and labels, applied as on HTTP ingest */
  constructor(
    private readonly store: EventStore, private readonly dataset: string, private readonly deadLetter: DeadLetterFile,
    private readonly options: IngestOptions = {}, private readonly name = 'local',
  ) {}

  async send(lines: string[]): Promise<void> {
    const file = this.store.tempFile('ndjson');
    await writeFile(file, lines.join('\n'));
    try {
      const r = await this.store.ingestFile(this.dataset, file, 'ndjson', this.options);
      this.eventsOut += r.ingested;
      if (r.failures.length > 0) {
        const time = new Date().toISOString();
        await this.deadLetter.write(r.failures.map((f) => ({ time, sink: this.name, status: 200, error: f.error })));
      }
    } finally {
      await rm(file, { force: true });
    }
  }
}
