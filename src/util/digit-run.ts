/**
 * Whether bytes hold a run of so many ASCII digits, read as they arrive in pieces. The store screens an
 * ingest batch with it: only a run of 19 digits can be an integer past int64, which DuckDB's json_type()
 * does not tell from a small one, and looking for that run in SQL cost more than a tenth of ingest
 * (docs/benchmarks.md). It probes every n-th byte: a run of n digits covers one probe, so a probe on
 * anything else passes over the n bytes up to it.
 */

/** The fewest digits of a decimal integer that may not fit int64 (2^63 has 19). */
export const LONG_INTEGER_DIGITS = 19;

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

export class DigitRunScreen {
  /** A run of n digits was seen. */
  found = false;
  /** Digits that ended the bytes seen so far (a run may go on in the next piece). */
  private carry = 0;

  constructor(private readonly n = LONG_INTEGER_DIGITS) {}

  push(b: Uint8Array): void {
    if (this.found) return;
    const n = this.n;
    const len = b.length;
    let i = 0;
    while (i < len && isDigit(b[i])) i++;
    if (this.carry + i >= n) {
      this.found = true;
      return;
    }
    if (i === len) {
      this.carry += len;
      return;
    }
    // b[i] is no digit: a run after it covers one of i + n, i + 2n, …
    let p = i + n;
    while (p < len) {
      if (!isDigit(b[p])) {
        p += n;
        continue;
      }
      let start = p;
      while (isDigit(b[start - 1])) start--;
      let end = p + 1;
      while (end < len && isDigit(b[end])) end++;
      if (end - start >= n) {
        this.found = true;
        return;
      }
      if (end === len) {
        this.carry = end - start;
        return;
      }
      p = end + n;
    }
    // Fewer than n bytes follow the last probe, which was no digit.
    let t = len;
    while (t > i && isDigit(b[t - 1])) t--;
    this.carry = len - t;
  }
}
