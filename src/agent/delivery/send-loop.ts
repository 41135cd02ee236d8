/**
 * Moves batches from a disk queue to a sink's send chain and acknowledges each one only after the sink delivered it: a
 * crash between the two repeats the batch (at least once), never loses it.
 *
 * Up to `concurrency` batches are in flight at once (compressing one while another is on the wire), and
 * the queue is acknowledged only over the unbroken run of delivered batches from its head, so a batch
 * that fails or is still retrying holds back the acknowledgement of those after it.
 */
import type { LogPosition } from '../queue/segment-log.js';
import type { DiskQueue } from '../queue/disk-queue.js';
import { readRecord } from './record.js';
import type { SendChain } from './send-chain.js';

/**
 * Batches in flight per sink unless configured. A batch spends about as long compressing (gzip, off the
 * event loop) as on the wire, so with two in flight the sink idles between them, and a fourth adds
 * nothing (docs/benchmarks.md).
 */
export const DEFAULT_SINK_CONCURRENCY = 3;

export class SendLoop {
  private readonly state = { closed: false };
  private running: Promise<void> | undefined;
  batchesDelivered = 0;

  constructor(
    private readonly queue: DiskQueue,
    private readonly chain: Pick<SendChain, 'send'>,
    private readonly onError: (e: unknown) => void = () => undefined,
    private readonly concurrency = 1,
    /**
     * Each acknowledgement's outcome: the error when the queue could not record a delivery (its disk; the
     * batches go again after a restart), undefined when it did.
     */
    private readonly onAck: (e?: unknown) => void = () => undefined,
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  private async loop(): Promise<void> {
    let pos = this.queue.ackedPosition;
    const inFlight: { next: LogPosition; done: boolean; sending: Promise<void> }[] = [];
    let failed = false;
    let acking = Promise.resolve();
    let wake: (() => void) | undefined;
    while (!this.state.closed && !failed) {
      if (inFlight.length >= this.concurrency) {
        await new Promise<void>((r) => (wake = r));
      } else {
        let records: Awaited<ReturnType<DiskQueue['next']>>;
        try {
          records = await this.queue.next(this.concurrency - inFlight.length, pos, this.state);
        } catch (e) {
          // The queue cannot be read (its disk): delivery stops, said loudly, and what is queued stays.
          if (!this.state.closed) this.onError(e);
          failed = true;
          break;
        }
        for (const r of records) {
          pos = r.next;
          const entry = { next: r.next, done: false, sending: Promise.resolve() };
          // The sink is done with the payload: its memory goes back to the queue, and the slot to the next
          // batch at once (not after the acknowledgement's fsyncs, which would idle the sink meanwhile).
          const settle = () => {
            this.queue.release(r.payload);
            wake?.();
          };
          // A record that cannot say its encoding fails here, and stays queued, like a send that gave up.
          entry.sending = Promise.resolve()
            .then(() => {
              const { body, encoding, to } = readRecord(r.tag, r.payload);
              return this.chain.send(body, encoding, to);
            })
            .then(
              async () => {
                entry.done = true;
                // Acknowledge the delivered run at the head, in order.
                let upTo: LogPosition | undefined;
                while (inFlight.length > 0 && inFlight[0]!.done) {
                  upTo = inFlight.shift()!.next;
                  this.batchesDelivered++;
                }
                settle();
                // Acknowledgements are written one after another, so a later one never lands first.
                if (upTo) await (acking = acking.then(() => this.acknowledge(upTo!)));
              },
              (e: unknown) => {
                // The sink gave up (closed, or an attempt limit): the batch stays queued for the next start.
                if (!this.state.closed && !failed) this.onError(e);
                failed = true;
                settle();
              },
            );
          inFlight.push(entry);
        }
      }
    }
    await Promise.all(inFlight.map((e) => e.sending));
    // Delivered batches already shifted out of inFlight may still be being acknowledged.
    await acking;
  }

  /** Records a delivery in the queue; a failure does not stop delivery, the next acknowledgement tries again. */
  private async acknowledge(upTo: LogPosition): Promise<void> {
    let failure: unknown;
    try {
      await this.queue.ack(upTo);
    } catch (e) {
      failure = e ?? new Error('the queue could not record a delivery');
    }
    this.onAck(failure);
  }

  /** From now on a send that fails is the stop's doing, not the sink's: call before closing the sink. */
  closing(): void {
    this.state.closed = true;
  }

  /** Stops after the batches in flight (whose sink the caller closes to cut their retries short). */
  async stop(): Promise<void> {
    this.state.closed = true;
    this.queue.wakeReaders();
    await this.running;
  }
}
