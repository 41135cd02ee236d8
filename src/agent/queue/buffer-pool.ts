/**
 * A few large buffers handed back and forth instead of allocated per batch. Batches are megabytes each and
 * a busy agent makes a dozen a second: fresh allocations for them grow the C heap by fragmentation (and
 * wait for V8's collector to be freed), while reusing the same few keeps the resident set flat.
 *
 * Whoever takes a buffer gives it back only once nothing refers to it any more.
 */
export class BufferPool {
  private readonly spare: ArrayBuffer[] = [];

  constructor(private readonly maxSpare: number) {}

  /** A buffer of exactly `size` bytes, uninitialised, backed by a spare of at least that size if there is one. */
  take(size: number): Buffer {
    for (let i = this.spare.length - 1; i >= 0; i--) {
      const ab = this.spare[i]!;
      if (ab.byteLength >= size) {
        this.spare.splice(i, 1);
        return Buffer.from(ab, 0, size);
      }
    }
    return Buffer.allocUnsafeSlow(size);
  }

  /**
   * Hands a buffer from take() back. A buffer that is only a view into other memory is left alone; with the
   * pool full, the smallest spare makes way for a larger one.
   */
  give(buf: Buffer): void {
    const ab = buf.buffer as ArrayBuffer;
    if (buf.byteOffset !== 0 || this.spare.includes(ab)) return;
    if (this.spare.length < this.maxSpare) {
      this.spare.push(ab);
      return;
    }
    let smallest = 0;
    for (let i = 1; i < this.spare.length; i++)
      if (this.spare[i]!.byteLength < this.spare[smallest]!.byteLength) smallest = i;
    if (this.spare[smallest]!.byteLength < ab.byteLength) this.spare[smallest] = ab;
  }
}
