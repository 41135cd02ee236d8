/**
 * DuckDB's share of the process's memory, by its own count (`duckdb_memory()`: what its buffer manager
 * holds), read every few seconds so the agent's /metrics can show it without a query per scrape.
 */
import type { Database } from './db.js';

const EVERY_MS = 5000;

export class DuckdbMemoryGauge {
  /** Bytes at the last reading; undefined before the first and while the database cannot answer. */
  bytes: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;

  constructor(private readonly db: Database) {}

  start(): void {
    void this.read();
    this.timer = setInterval(() => void this.read(), EVERY_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async read(): Promise<void> {
    // A reading still waiting for a connection (every one busy) is not joined by another.
    if (this.reading) return;
    this.reading = true;
    try {
      this.bytes = await this.db.memoryBytes();
    } catch {
      // Closed or reopening: no figure rather than a stale one.
      this.bytes = undefined;
    } finally {
      this.reading = false;
    }
  }
}
