/**
 * What an ingest body's bytes show, seen as they pass on their way to the spool file, so the store need
 * not look for it in SQL: each look there is a scan of the batch's text (docs/benchmarks.md).
 */
import { DigitRunScreen } from '../util/digit-run.js';

export interface BodyFacts {
  /** A run of 19 digits: an integer in the body may pass int64. */
  longDigitRun: boolean;
  /** The bytes `"data"`: an event may be in the spec's grouped form ({time, data, labels}). */
  dataKey: boolean;
}

const DATA_KEY = Buffer.from('"data"');

export class BodyScreen {
  private readonly digits = new DigitRunScreen();
  private dataKey = false;
  /** The last bytes seen, shorter than the key: the key may straddle two pieces. */
  private tail: Buffer = Buffer.alloc(0);

  push(chunk: Uint8Array): void {
    this.digits.push(chunk);
    if (this.dataKey) return;
    const b = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (b.indexOf(DATA_KEY) >= 0) {
      this.dataKey = true;
      return;
    }
    const keep = DATA_KEY.length - 1;
    const seam = Buffer.concat([this.tail, b.subarray(0, keep)]);
    if (seam.indexOf(DATA_KEY) >= 0) {
      this.dataKey = true;
      return;
    }
    this.tail = Buffer.from(
      b.length >= keep ? b.subarray(b.length - keep) : Buffer.concat([this.tail, b]).subarray(-keep),
    );
  }

  facts(): BodyFacts {
    return { longDigitRun: this.digits.found, dataKey: this.dataKey };
  }
}

/** The facts of a body held whole. */
export function screenBody(b: Uint8Array): BodyFacts {
  const screen = new BodyScreen();
  screen.push(b);
  return screen.facts();
}
