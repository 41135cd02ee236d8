/**
 * Acknowledges a stream's offsets once every copy of its lines is held durably: a source whose lines reach
 * sinks by several paths (two sinks, or one sink both directly and through a transform that holds lines
 * back) has one copy per path, and a file's checkpoint advances to the lowest offset they have queued.
 */
import type { Mark } from '../delivery/batcher.js';

export class AckGate {
  private readonly pending = new WeakMap<Mark['stream'], { generation: number; offsets: Map<number, number> }>();

  /** @param copiesOf how many paths a source's lines take to sinks (Topology.copiesOf) */
  constructor(private readonly copiesOf: (source: string) => number) {}

  /** @param queued false when a full queue dropped the batch (drop_newest): acknowledged all the same */
  durable(mark: Mark, queued = true): void {
    const { stream } = mark;
    if (!queued) stream.dropped?.();
    const needed = this.copiesOf(stream.source);
    if (needed <= 1) {
      stream.acknowledge(mark.offset, mark.generation);
      return;
    }
    let p = this.pending.get(stream);
    if (!p || p.generation !== mark.generation)
      this.pending.set(stream, (p = { generation: mark.generation, offsets: new Map() }));
    const route = mark.route ?? 0;
    p.offsets.set(route, Math.max(p.offsets.get(route) ?? 0, mark.offset));
    if (p.offsets.size === needed) stream.acknowledge(Math.min(...p.offsets.values()), mark.generation);
  }
}
