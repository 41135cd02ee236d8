/**
 * The agent's promise, tried adversarially against the real binary and a real receiver (bench/torture.ts):
 * a random schedule of appends, rotations, copytruncate, truncation, deletions, kill -9 and receiver
 * restarts, over a random topology (direct, parse, a diamond through multiline, a fan-out to two sinks, a
 * filter dropping a third of the lines on one of two paths, a route whose three paths meet at one sink);
 * then every copy of every line written must have arrived, whole, with duplicates within what the README
 * allows. The seed is random unless FERRY_TORTURE_SEED is set, and is printed in any failure.
 * `npm run soak -- --minutes N` runs the same for longer.
 */
import { describe, expect, it } from 'vitest';
import { describeReport, seededRandom, torture } from '../../../bench/torture.js';

/**
 * One torture run from FERRY_TORTURE_SEED or a random seed, checked for what every topology promises: no
 * line lost or torn, duplicates within what the README allows. The summary says how to replay it.
 */
async function tortured(
  o: Omit<Parameters<typeof torture>[0], 'seed'>,
  only: string,
): Promise<{ r: Awaited<ReturnType<typeof torture>>; summary: string }> {
  const seed = process.env.FERRY_TORTURE_SEED
    ? Number(process.env.FERRY_TORTURE_SEED)
    : Math.floor(Math.random() * 2 ** 31);
  const r = await torture({ seed, ...o });
  const summary = `${describeReport(r)} (replay: FERRY_TORTURE_SEED=${seed} npx vitest run test/integration/agent/promise.test.ts${only})`;
  console.log(summary);
  expect(r.lostSample, summary).toEqual([]);
  expect(r.tornSample, summary).toEqual([]);
  expect(r.duplicated, summary).toBeLessThanOrEqual(r.allowedDuplicates);
  return { r, summary };
}

describe('no line lost (model-based torture)', () => {
  it('the seeded generator replays the same schedule from the same seed', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const c = seededRandom(8);
    const xs = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
    expect(Array.from({ length: 5 }, () => c())).not.toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });

  it('every line written arrives at least once and whole, through rotations, truncations, kill -9 and receiver restarts', async () => {
    const { r, summary } = await tortured({ durationMs: 50_000 }, '');
    expect(r.written, summary).toBeGreaterThan(1000);
    expect(r.ops['kill -9 and restart'] ?? 0, summary).toBeGreaterThan(0);
  }, 180_000);

  it('straight from the file to the sink, where lines go on in runs and batches are cut inside them, every line arrives', async () => {
    const { r, summary } = await tortured({ durationMs: 25_000, mode: 'passthrough' }, ' -t straight');
    expect(r.written, summary).toBeGreaterThan(500);
  }, 150_000);

  it('through a route whose paths meet again at one sink, one of them sampled, every path of every line arrives', async () => {
    const { r, summary } = await tortured({ durationMs: 25_000, mode: 'route' }, ' -t route');
    expect(r.written, summary).toBeGreaterThan(500);
  }, 150_000);
});
