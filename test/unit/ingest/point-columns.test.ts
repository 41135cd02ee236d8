/**
 * Point columns: what the OTLP worker hands the metrics store, as it is built and laid out.
 */
import { describe, expect, it } from 'vitest';
import { POINT_BYTES, PointColumns, PointColumnsBuilder } from '../../../src/ingest/point-columns.js';

describe('point columns', () => {
  it('keep every point as pushed, past the builder growing, and a gap as null', () => {
    const b = new PointColumnsBuilder();
    const n = 5000;
    for (let i = 0; i < n; i++) b.push(i % 7, 1_767_225_600 + i, i % 11 === 0 ? null : i / 4);
    const c = b.finish();
    expect(c.count).toBe(n);
    expect(c.buffer.byteLength).toBe(n * POINT_BYTES);
    for (const i of [0, 1, 1023, 1024, 1025, 2047, 2048, 4999]) {
      expect(c.series[i]).toBe(i % 7);
      expect(c.seconds[i]).toBe(1_767_225_600 + i);
      expect(c.value(i)).toBe(i % 11 === 0 ? null : i / 4);
    }
  });

  it('read back from their buffer alone, as a worker hands them over', () => {
    const b = new PointColumnsBuilder();
    b.push(3, -1, 0);
    b.push(0, 2 ** 40, -2.5);
    const c = b.finish();
    const again = new PointColumns(c.buffer.slice(0), c.count);
    expect([...again.series]).toEqual([3, 0]);
    expect([...again.seconds]).toEqual([-1, 2 ** 40]);
    expect([again.value(0), again.value(1)]).toEqual([0, -2.5]);
    expect(new PointColumnsBuilder().finish().count).toBe(0);
  });

  it('refuse a buffer too small for its count', () => {
    expect(() => new PointColumns(new ArrayBuffer(39), 2)).toThrow(/2 points need 40 bytes, not 39/);
  });
});
