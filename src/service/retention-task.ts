/** Runs dataset retention on a timer. The clock lives in the store (injectable), so tests need no waiting. */
import type { Logger } from 'pino';
import type { EventStore } from './store/event-store.js';

export class RetentionTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  /** Runs a first pass right away (data may have expired while the service was down), then on the timer. */
  start(): void {
    void this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /** One pass over all datasets; overlapping calls share the pass in progress. */
  runOnce(): Promise<void> {
    this.running ??= this.store
      .enforceRetention()
      .then((deleted) => {
        if (Object.keys(deleted).length > 0) this.log.info({ deleted }, 'retention removed expired events');
      })
      .catch((err: unknown) => this.log.error({ err }, 'retention pass failed'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
