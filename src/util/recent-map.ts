/** A map that keeps its most recently used entries, up to `capacity` (a read counts as a use). */
export class RecentMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(k: K): V | undefined {
    const v = this.map.get(k);
    if (v !== undefined) {
      // Most recently used last: the first in the map is the one to drop.
      this.map.delete(k);
      this.map.set(k, v);
    }
    return v;
  }

  set(k: K, v: V): void {
    this.map.delete(k);
    this.map.set(k, v);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
  }

  delete(k: K): void {
    this.map.delete(k);
  }

  get size(): number {
    return this.map.size;
  }
}
