/**
 * A batch's metric points as three columns in one ArrayBuffer: each point's series (its number within the
 * batch), its time in whole seconds and its value (NaN: a gap, as no stored value is ever NaN). One buffer,
 * so that the OTLP worker hands a body's points over without a copy, and the metrics store appends them to
 * DuckDB as they are, with no text in between. Pure.
 */

/** What a point takes in the columns: two doubles and an int32. */
export const POINT_BYTES = 20;

export class PointColumns {
  readonly seconds: Float64Array;
  readonly values: Float64Array;
  readonly series: Int32Array;

  /** `buffer` laid out as `count` seconds, `count` values, then `count` series numbers. */
  constructor(
    readonly buffer: ArrayBuffer,
    readonly count: number,
  ) {
    if (buffer.byteLength < count * POINT_BYTES)
      throw new Error(`point columns of ${count} points need ${count * POINT_BYTES} bytes, not ${buffer.byteLength}`);
    this.seconds = new Float64Array(buffer, 0, count);
    this.values = new Float64Array(buffer, count * 8, count);
    this.series = new Int32Array(buffer, count * 16, count);
  }

  /** The value of point i, null for a gap. */
  value(i: number): number | null {
    const v = this.values[i]!;
    return v === v ? v : null;
  }
}

/** Points gathered one at a time into growing columns, then laid out in one buffer of their own size. */
export class PointColumnsBuilder {
  private seconds = new Float64Array(1024);
  private values = new Float64Array(1024);
  private series = new Int32Array(1024);
  count = 0;

  push(series: number, seconds: number, value: number | null): void {
    if (this.count === this.series.length) this.grow();
    const i = this.count++;
    this.series[i] = series;
    this.seconds[i] = seconds;
    this.values[i] = value === null ? NaN : value;
  }

  private grow(): void {
    const size = this.series.length * 2;
    const seconds = new Float64Array(size);
    const values = new Float64Array(size);
    const series = new Int32Array(size);
    seconds.set(this.seconds);
    values.set(this.values);
    series.set(this.series);
    this.seconds = seconds;
    this.values = values;
    this.series = series;
  }

  finish(): PointColumns {
    const n = this.count;
    const out = new PointColumns(new ArrayBuffer(n * POINT_BYTES), n);
    out.seconds.set(this.seconds.subarray(0, n));
    out.values.set(this.values.subarray(0, n));
    out.series.set(this.series.subarray(0, n));
    return out;
  }
}
