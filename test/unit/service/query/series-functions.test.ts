/**
 * The JavaScript series functions (apl/functions/series-loops.ts) as pure functions: the Fourier
 * transform against the definition, at lengths that are and are not powers of two, and back again.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dft, fillLinear, fir, iir, seriesCall } from '../../../../src/apl/functions/series-loops.js';

/** The DFT by its definition, O(n²). */
function naive(x: number[]): [number, number][] {
  return x.map((_, k) => {
    let re = 0;
    let im = 0;
    x.forEach((v, t) => {
      const a = (-2 * Math.PI * k * t) / x.length;
      re += v * Math.cos(a);
      im += v * Math.sin(a);
    });
    return [re, im];
  });
}

describe('series functions', () => {
  it('the transform equals the DFT by definition at any length, and the inverse gives the series back', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1000, max: 1000, noNaN: true }), { minLength: 1, maxLength: 300 }),
        (x) => {
          const f = dft(x, [], false);
          naive(x).forEach(([re, im], k) => {
            expect(Math.abs(f[k]!.real! - re)).toBeLessThan(1e-6 * (1 + Math.abs(re)) * x.length);
            expect(Math.abs(f[k]!.imag! - im)).toBeLessThan(1e-6 * (1 + Math.abs(im)) * x.length);
          });
          const back = dft(
            f.map((c) => c.real),
            f.map((c) => c.imag),
            true,
          );
          back.forEach((c, t) => expect(Math.abs(c.real! - x[t]!)).toBeLessThan(1e-6 * (1 + Math.abs(x[t]!))));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('filters and fills', () => {
    expect(fir([1, 2, 3], [1, 1], false)).toEqual([1, 3, 5]);
    expect(iir([1, 0, 0, 0], [1], [1, -0.5])).toEqual([1, 0.5, 0.25, 0.125]);
    expect(iir([1, 2], [1], [0])).toEqual([null, null]);
    expect(fillLinear([null, null], null)).toEqual([null, null]);
    expect(fillLinear([0, -1, -1, 6], -1)).toEqual([0, 2, 4, 6]);
    expect(seriesCall('fill_const', ['not a series', 1])).toBe(null);
    expect(() => seriesCall('fir', [Array(100_000).fill(1), Array(1000).fill(1)])).toThrow(
      /more work than one call may do/,
    );
  });
});
