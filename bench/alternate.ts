/** What the engine benches share: a store in the bench's process, and timing the engine against hand-written SQL. */
import { queryFunctions } from '../src/service/query/functions.js';
import { EventStore } from '../src/service/store/event-store.js';

/**
 * Runs `a` and `b` `times` times each, alternating, each first in every other round, so both see the same
 * cache state and machine noise (the second of a pair runs on what the first left warm); each run's ms.
 */
export async function timeAlternating(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  times: number,
): Promise<{ a: number[]; b: number[] }> {
  const ta: number[] = [];
  const tb: number[] = [];
  const timed = async (run: () => Promise<unknown>, into: number[]) => {
    const t = performance.now();
    await run();
    into.push(performance.now() - t);
  };
  for (let i = 0; i < times; i++) {
    if (i % 2 === 0) {
      await timed(a, ta);
      await timed(b, tb);
    } else {
      await timed(b, tb);
      await timed(a, ta);
    }
  }
  return { a: ta, b: tb };
}

/** The middle value. */
export const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

/** A store in the bench's own process, with the settings the engine benches measure under. */
export async function openBenchStore(dataDir: string, memoryLimitMb: number): Promise<EventStore> {
  return EventStore.open({
    dataDir,
    memoryLimitBytes: memoryLimitMb * 1024 * 1024,
    maxFieldsPerDataset: 2048,
    defaultRetentionDays: 0,
    maxObjectBytes: 16 * 1024 * 1024,
    checkpointThresholdBytes: 256 * 1024 * 1024,
    functions: await queryFunctions(),
  });
}
