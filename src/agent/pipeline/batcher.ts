/**
 * Groups serialised events into batches by count, by bytes and by time, whichever comes first, and hands
 * each batch on (to the disk queue). add() waits while batches are being handed on, so a full queue slows
 * the sources down instead of growing memory.
 */
export interface BatchLimits {
  maxEvents: number;
  maxBytes: number;
  timeoutMs: number;
}

/** Where a line came from: acknowledged to its stream once the batch holding it is durable. */
export interface Mark {
  stream: { acknowledge(offset: number, generation: number): void };
  offset: number;
  generation: number;
}

export const DEFAULT_BATCH: BatchLimits = { maxEvents: 10_000, maxBytes: 5 * 1024 * 1024, timeoutMs: 1000 };

export class Batcher {
  private lines: string[] = [];
  /** The last mark of each stream in the batch being gathered (offsets only grow within a stream). */
  private marks = new Map<Mark['stream'], Mark>();
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly limits: BatchLimits, private readonly handOn: (lines: string[], marks: Mark[]) => Promise<void>) {}

  /**
   * Adds a line. A full batch is handed on while the next one gathers; add() waits only when the batch
   * before that one is still being handed on (so at most one batch is in hand-over and one gathering).
   */
  async add(line: string, mark?: Mark): Promise<void> {
    this.lines.push(line);
    if (mark) this.marks.set(mark.stream, mark);
    this.bytes += line.length + 1;
    if (this.lines.length >= this.limits.maxEvents || this.bytes >= this.limits.maxBytes) {
      const before = this.flushing;
      void this.flush().catch(() => undefined); // its failure surfaces through the next add or flush
      await before;
    } else this.timer ??= setTimeout(() => void this.flush().catch(() => undefined), this.limits.timeoutMs);
  }

  /** Hands on what is gathered now (also used on shutdown). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0) return this.flushing;
    const batch = this.lines;
    const marks = [...this.marks.values()];
    this.lines = [];
    this.marks = new Map();
    this.bytes = 0;
    this.flushing = this.flushing.then(() => this.handOn(batch, marks));
    return this.flushing;
  }
}
