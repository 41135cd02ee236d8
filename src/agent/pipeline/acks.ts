/**
 * Acknowledges a stream's offsets once every sink its source feeds holds them durably: with two sinks,
 * a file's checkpoint advances to the lower of the two offsets they have queued.
 */
import type { Mark } from './batcher.js';

export class AckGate {
  private readonly pending = new WeakMap<Mark['stream'], { generation: number; offsets: Map<number, number> }>();

  /** @param sinksOf the indices of the sinks a source's lines reach */
  constructor(private readonly sinksOf: (source: string) => readonly number[]) {}

  durable(sink: number, mark: Mark): void {
    const { stream } = mark;
    const needed = this.sinksOf(stream.source).length;
    if (needed <= 1) {
      stream.acknowledge(mark.offset, mark.generation);
      return;
    }
    let p = this.pending.get(stream);
    if (!p || p.generation !== mark.generation)
      this.pending.set(stream, (p = { generation: mark.generation, offsets: new Map() }));
    p.offsets.set(sink, Math.max(p.offsets.get(sink) ?? 0, mark.offset));
    if (p.offsets.size === needed) stream.acknowledge(Math.min(...p.offsets.values()), mark.generation);
  }
}
