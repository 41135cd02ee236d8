/**
 * The dead-letter file: what a receiver refused for good (a 4xx other than 408/413/429, or events it
 * listed as failed), one JSON line each, with the status and the error, so nothing is dropped silently.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface DeadLetter {
  time: string;
  sink: string;
  /** The dataset the event was for, when it came with its own (not the sink's). */
  dataset?: string;
  status: number;
  error: string;
  /** The refused event, as it was sent (absent when the receiver did not say which event failed). */
  event?: unknown;
}

/** A line as its JSON value, or as text when it is not JSON. */
function eventOf(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return line;
  }
}

export class DeadLetterFile {
  count = 0;
  private ready: Promise<unknown> | undefined;

  constructor(readonly path: string) {}

  /** Refused events (NDJSON lines as sent) with the status and the reason they were refused for. */
  writeEvents(lines: readonly string[], sink: string, status: number, error: string, dataset?: string): Promise<void> {
    const time = new Date().toISOString();
    const to = dataset === undefined ? {} : { dataset };
    return this.write(lines.map((l) => ({ time, sink, ...to, status, error, event: eventOf(l) })));
  }

  async write(entries: DeadLetter[]): Promise<void> {
    if (entries.length === 0) return;
    this.ready ??= mkdir(dirname(this.path), { recursive: true });
    await this.ready;
    await appendFile(this.path, entries.map((e) => `${JSON.stringify(e)}\n`).join(''));
    this.count += entries.length;
  }
}
