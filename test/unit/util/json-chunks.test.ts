/**
 * jsonChunks (src/util/json-chunks.ts) against JSON.stringify and exactJson: the chunks joined are the
 * text they make, over seeded random values shaped like the service's answers (long columns of texts,
 * numbers and nulls; objects with keys JSON leaves out; nested tables), and no chunk is much longer than
 * its bound unless one value is.
 */
import { describe, expect, it } from 'vitest';
import { jsonChunks } from '../../../src/util/json-chunks.js';
import { exactJson, exactStringifier } from '../../../src/util/exact-json.js';
import { testSeed } from '../../support/helpers.js';

const REPLAY = 'npx vitest run test/unit/util/json-chunks.test.ts';

function randomValue(rnd: () => number, depth: number, bigints: boolean): unknown {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const scalar = (): unknown =>
    pick<() => unknown>([
      () => null,
      () => undefined,
      () => rnd() < 0.5,
      () => Math.floor(rnd() * 1e6) - 5e5,
      () => rnd() * 1e12,
      () => pick([NaN, Infinity, -0, 1e308]),
      () => 'x'.repeat(Math.floor(rnd() * 5000)),
      () => pick(['', 'é ✓ 🙂', '"quoted" \\ back', '\u0000\n\t', '\ud800 lone', '</script>']),
      () => new Date(Math.floor(rnd() * 2e12)),
      () => (bigints ? BigInt(Number.MAX_SAFE_INTEGER) * 3n + BigInt(Math.floor(rnd() * 100)) : 7),
      () => () => 'a function',
    ])();
  if (depth <= 0 || rnd() < 0.3) return scalar();
  if (rnd() < 0.5) {
    // A column of values, long or short, or a short list of nested values.
    if (rnd() < 0.5) return Array.from({ length: pick([0, 1, 3, 50, 3000]) }, scalar);
    return Array.from({ length: pick([0, 1, 2, 3]) }, () => randomValue(rnd, depth - 1, bigints));
  }
  const o: Record<string, unknown> = {};
  const n = Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++)
    o[pick(['a', 'b', 'columns', 'é', '"k"', '', `k${i}`, '__proto__x'])] = randomValue(rnd, depth - 1, bigints);
  return o;
}

describe('an answer as JSON in chunks', () => {
  it('joins to what JSON.stringify makes, over random answers (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_JSON_CHUNKS_SEED', REPLAY);
    for (let round = 0; round < 300; round++) {
      const v = randomValue(rnd, 5, false);
      const chunks = [...jsonChunks(v)];
      expect(chunks.join(''), `${replay}, round ${round}`).toBe(JSON.stringify(v) ?? 'null');
    }
  });

  it('joins to what exactJson makes when the caller writes 64-bit integers exactly (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_JSON_CHUNKS_SEED', REPLAY);
    for (let round = 0; round < 200; round++) {
      const v = { tables: [randomValue(rnd, 4, true)], n: 2n ** 63n - 1n };
      const text = [...jsonChunks(v, exactJson)].join('');
      expect(text, `${replay}, round ${round}`).toBe(exactJson(v));
      expect(text).toContain('"n":9223372036854775807');
    }
  });

  it('writes many small objects in runs, not one call a value (an exact writer costs more a call)', () => {
    const matches = Array.from({ length: 20_000 }, (_, i) => ({
      _time: '2026-11-28T10:00:00Z',
      _rowId: `r${i}`,
      data: { id: BigInt(i) + 2n ** 60n, msg: `message ${i}`, tags: { a: i } },
    }));
    let calls = 0;
    const exact = exactStringifier();
    const counted = (v: unknown) => {
      calls++;
      return exact(v);
    };
    const text = [...jsonChunks({ status: {}, matches }, counted)].join('');
    expect(text).toBe(exactJson({ status: {}, matches }));
    // About 2 MB of text in runs of 16 K characters.
    expect(calls).toBeLessThan(400);
  });

  it('writes a value nested far deeper than an answer is, as JSON.stringify does', () => {
    let v: unknown = Array.from({ length: 5000 }, (_, i) => ({ i, s: 'y'.repeat(i % 40) }));
    for (let d = 0; d < 100; d++) v = d % 2 ? [v, d] : { d, v };
    expect([...jsonChunks(v)].join('')).toBe(JSON.stringify(v));
  });

  it('hands a long column on in chunks of about 64 K characters, not as one text', () => {
    const column = Array.from({ length: 50_000 }, (_, i) => `value ${i} ${'x'.repeat(200)}`);
    const chunks = [...jsonChunks({ tables: [{ columns: [column, column.map((_, i) => i)] }] })];
    expect(chunks.length).toBeGreaterThan(100);
    for (const c of chunks) expect(c.length).toBeLessThan(64 * 1024 + 17 * 1024);
    expect(JSON.parse(chunks.join(''))).toEqual({ tables: [{ columns: [column, column.map((_, i) => i)] }] });
  });
});
