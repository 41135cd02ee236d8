/**
 * Moves batches from a disk queue to a sink, in order, and acknowledges each one only after the sink
 * delivered it: a crash between the two repeats the batch (at least once), never loses it.
 */
import type { DiskQueue } from '../queue/disk-queue.js';

export interface BatchSink {
  send(lines: string[]): Promise<void>;
}

export class Delivery {
  private readonly state = { closed: false };
  private running: Promise<void> | undefined;
  batchesDelivered = 0;

  constructor(private readonly queue: DiskQueue, private readonly sink: BatchSink, private readonly onError: (e: unknown) => void = () => undefined) {}

  start(): void {
    this.running ??= this.loop();
  }

  private async loop(): Promise<void> {
    let pos = this.queue.ackedPosition;
    while (!this.state.closed) {
      const records = await this.queue.next(1, pos, this.state);
      for (const r of records) {
        try {
          await this.sink.send(r.payload.toString('utf8').split('\n'));
        } catch (e) {
          // The sink gave up (closed, or an attempt limit): the batch stays queued for the next start.
          if (!this.state.closed) this.onError(e);
          return;
        }
        await this.queue.ack(r.next);
        this.batchesDelivered++;
        pos = r.next;
      }
    }
  }

  /** Stops after the batch in flight (whose sink the caller closes to cut its retries short). */
  async stop(): Promise<void> {
    this.state.closed = true;
    this.queue.wakeReaders();
    await this.running;
  }
}
