/**
 * The longest value of a dataset's text columns (EventStore.longestValues), which bounds the text a query
 * may make (service/query/made-text-budget.ts): from DuckDB's statistics, cached until the next write, and
 * never shorter than what a write acknowledged before the lookup holds, while writes and lookups overlap.
 * Seeded: a failure names its seed (FERRY_LONGEST_SEED=S replays it).
 */
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { EventStore } from '../../../../src/service/store/event-store.js';
import { tempDir } from '../../../support/helpers.js';
import { rng } from '../../../../bench/access-log.js';

const open: EventStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => undefined);
});

async function openStore(): Promise<EventStore> {
  const s = await EventStore.open({
    dataDir: tempDir('ferry-longest-'),
    memoryLimitBytes: 256 << 20,
    maxFieldsPerDataset: 50,
    defaultRetentionDays: 0,
    maxObjectBytes: 16 << 20,
  });
  open.push(s);
  return s;
}

async function load(s: EventStore, ds: string, events: object[]): Promise<void> {
  const file = s.tempFile('ndjson');
  writeFileSync(file, events.map((e) => JSON.stringify(e)).join('\n'));
  await s.ingestFile(ds, file, 'ndjson', {});
}

describe('the longest value of a text column', () => {
  it('is read from the statistics of each column asked, in bytes', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ a: 'x' }]);
    const column = (name: string) => s.schema('d').fields.find((f) => f.name === name)!.column;
    await load(s, 'd', [{ a: 'é'.repeat(1000), b: 'short' }, { a: 'abc' }]);
    const found = await s.longestValues('d', [column('a'), column('b')]);
    expect(found).toEqual(
      new Map([
        [column('a'), 2000],
        [column('b'), 5],
      ]),
    );
  });

  it('is never shorter than what an acknowledged write holds, with writes and lookups overlapping', async () => {
    const seed = Number(process.env.FERRY_LONGEST_SEED ?? Date.now() % 1_000_000);
    const next = rng(seed);
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ a: 'x' }]);
    const a = s.schema('d').fields.find((f) => f.name === 'a')!.column;
    let acknowledged = 1;
    const lookups: Promise<void>[] = [];
    for (let round = 0; round < 30; round++) {
      const length = 1 + Math.floor(next() * 20_000);
      const writing = load(s, 'd', [{ a: 'y'.repeat(length) }]).then(() => {
        acknowledged = Math.max(acknowledged, length);
      });
      // Lookups before, during and after the write: each sees at least what was acknowledged before it began.
      for (let k = 0; k < 1 + Math.floor(next() * 3); k++) {
        const floor = acknowledged;
        lookups.push(
          s.longestValues('d', [a]).then((m) => {
            expect(m.get(a), `seed ${seed}, round ${round}`).toBeGreaterThanOrEqual(floor);
          }),
        );
        if (next() < 0.5) await new Promise((r) => setImmediate(r));
      }
      if (next() < 0.7) await writing;
      else lookups.push(writing);
    }
    await Promise.all(lookups);
    expect((await s.longestValues('d', [a])).get(a), `seed ${seed}`).toBe(acknowledged);
  });
});
