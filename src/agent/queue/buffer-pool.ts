/**
 * A few large buffers handed back and forth instead of allocated per batch. Batches are megabytes each and
 * a busy agent makes a dozen a second: fresh allocations for them grow the C heap by fragmentation (and
 * wait for V8's collector to be freed), while reusing the same few keeps the resident set flat.
 *
 * Whoever takes a buffer gives it back only once nothing refers to it any more.
 */
export class BufferPool {
  private readonly spare: ArrayBuffer[] = [];

  /**
   * @param maxSpare buffers kept for reuse: as many as can be given back while none is taken, or some are
   *   dropped for the collector and made afresh
   * @param step new buffers are made a multiple of this size, so that a spare serves a slightly larger
   *   request next time (buffers of varying sizes: queued batches)
   */
  constructor(
    private readonly maxSpare: number,
    private readonly step = 1,
  ) {}

  /** A buffer of exactly `size` bytes, uninitialised, backed by a spare of at least that size if there is one. */
  take(size: number): Buffer {
    for (let i = this.spare.length - 1; i >= 0; i--) {
      const ab = this.spare[i]!;
      if (ab.byteLength >= size) {
        this.spare.splice(i, 1);
        return Buffer.from(ab, 0, size);
      }
    }
    const made = Math.ceil(size / this.step) * this.step;
    return made === size ? Buffer.allocUnsafeSlow(size) : Buffer.allocUnsafeSlow(made).subarray(0, size);
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
