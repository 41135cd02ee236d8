import { describe, expect, it } from 'vitest';
import { DigitRunScreen } from '../../../src/util/digit-run.js';

function hasDigitRun(b: Uint8Array, n?: number): boolean {
  const screen = new DigitRunScreen(n);
  screen.push(b);
  return screen.found;
}
import { rng } from '../../../bench/access-log.js';

const SEED = Number(process.env.FERRY_DIGIT_RUN_SEED ?? Date.now() % 1_000_000);

describe('the digit-run screen', () => {
  it('finds a run of 19 digits wherever it lies, and only then', () => {
    const at = (s: string) => hasDigitRun(Buffer.from(s));
    expect(at('1234567890123456789')).toBe(true);
    expect(at('123456789012345678')).toBe(false);
    expect(at('{"id":9223372036854775808}')).toBe(true);
    expect(at('{"id":922337203685477580}')).toBe(false);
    expect(at('{"a":"x","id":12345678901234567890123}')).toBe(true);
    expect(at('{"t":"2026-11-27T05:18:26.123456789Z","ip":"10.0.0.1"}')).toBe(false);
    expect(at('')).toBe(false);
  });

  it(`agrees with a regular expression on random bytes cut at random places (seed ${SEED})`, () => {
    const r = rng(SEED);
    for (let round = 0; round < 3000; round++) {
      const len = Math.floor(r() * 200);
      const n = 1 + Math.floor(r() * 25);
      const digitShare = r();
      const bytes = Buffer.alloc(len);
      for (let i = 0; i < len; i++)
        bytes[i] = r() < digitShare ? 0x30 + Math.floor(r() * 10) : 0x20 + Math.floor(r() * 16);
      const expected = new RegExp(`[0-9]{${n}}`).test(bytes.toString('latin1'));
      const screen = new DigitRunScreen(n);
      for (let from = 0; from < len;) {
        const to = Math.min(len, from + 1 + Math.floor(r() * 40));
        screen.push(bytes.subarray(from, to));
        from = to;
      }
      if (screen.found !== expected)
        throw new Error(`seed ${SEED}, round ${round}: n=${n} "${bytes.toString('latin1')}": ${screen.found}`);
      expect(hasDigitRun(bytes, n)).toBe(expected);
    }
  });
});
