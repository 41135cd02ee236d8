/**
 * DuckDB's checkpoint pins the blocks it writes, and one that cannot (a query holds all of memory_limit)
 * is fatal: the database is invalidated and every request answers 503 until it is reopened (the project's
 * CI caught the hostile-input fuzz doing it). So the store's checkpoint runs only while no read does. A
 * due one waits for a moment none runs, reads going on meanwhile; past the service's query_timeout it
 * holds new reads back until the running ones end, a query counting that wait in its time. Ingests pass.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryTimeout } from '../../../../src/service/store/db.js';
import { startTestService } from '../../../support/helpers.js';

const THRESHOLD = 512 * 1024;
/** A query DuckDB stops only at its time limit (between vectors). */
const ENDLESS = 'SELECT sum(hash(i)) FROM range(100000000000) t(i)';

/** A service whose checkpoints fold at THRESHOLD of WAL, with the test's handles on it. */
async function start(queryTimeoutMs: number) {
  const svc = await startTestService({ checkpointThresholdBytes: THRESHOLD, queryTimeoutMs });
  const backgroundErrors: string[] = [];
  // What the service logs as "checkpoint failed".
  svc.store.opts.onBackgroundError = (err, what) => backgroundErrors.push(`${what}: ${(err as Error).message}`);
  await svc.createDataset('events');
  const token = await svc.apiToken();
  return {
    svc,
    backgroundErrors,
    walBytes(): number {
      try {
        return statSync(join(svc.dataDir, 'ferry.duckdb.wal')).size;
      } catch {
        return 0;
      }
    },
    /** About a quarter of THRESHOLD of WAL per batch. */
    async ingest(batch: number): Promise<number> {
      const events = Array.from({ length: 2000 }, (_, i) => ({
        batch,
        i,
        msg: `event ${i} of batch ${batch}`.repeat(2),
      }));
      return (await svc.call('POST', '/v1/datasets/events/ingest', events, token)).status;
    },
    async count(): Promise<number> {
      const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['events'] | count" }, token);
      expect(r.status).toBe(200);
      return Number(((await r.json()) as { tables: { columns: unknown[][] }[] }).tables[0]!.columns[0]![0]);
    },
  };
}
type Started = Awaited<ReturnType<typeof start>>;

/** Resolves to when the promise settled. */
const settledAt = (p: Promise<unknown>) =>
  p.then(
    () => Date.now(),
    () => Date.now(),
  );

let patient: Started;
let impatient: Started;
beforeAll(async () => {
  patient = await start(30_000);
  // Its checkpoints hold new reads back 300 ms after they fall due.
  impatient = await start(300);
});
afterAll(async () => {
  await patient?.svc.stop();
  await impatient?.svc.stop();
});

/** Ingests past THRESHOLD while a long read runs; then the checkpoint is due. */
async function dueWhileReading(s: Started, readMs: number) {
  const long = s.svc.store.readColumns(ENDLESS, readMs).catch((e: unknown) => e);
  const longEnded = settledAt(long);
  await new Promise((r) => setTimeout(r, 200));
  for (let b = 0; b < 6; b++) expect(await s.ingest(b)).toBe(200);
  expect(s.walBytes()).toBeGreaterThanOrEqual(THRESHOLD);
  return { long, longEnded };
}

async function foldedWithin(s: Started, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (s.walBytes() >= THRESHOLD) {
    expect(Date.now(), 'the WAL was never folded').toBeLessThan(until);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the store's checkpoint", () => {
  it('waits for the read running, other reads going on meanwhile, and folds the WAL once none runs', async () => {
    const s = patient;
    const before = await s.count();
    const { long, longEnded } = await dueWhileReading(s, 6000);
    // Another read is not held back by the checkpoint due: it answers while the long one runs.
    expect((await s.svc.store.readColumns('SELECT 42', 30_000))[0]).toEqual([42]);
    const answeredAt = Date.now();
    // Time enough for a checkpoint of this WAL, had it not waited.
    await new Promise((r) => setTimeout(r, 1000));
    expect(s.walBytes(), 'the WAL was folded while a query ran').toBeGreaterThanOrEqual(THRESHOLD);
    expect(await long).toBeInstanceOf(QueryTimeout);
    expect(answeredAt).toBeLessThan(await longEnded);
    await foldedWithin(s, 10_000);
    expect(await s.count()).toBe(before + 6 * 2000);
    expect(s.svc.store.db.reopens).toBe(0);
    expect(s.backgroundErrors).toEqual([]);
  }, 60_000);

  it('past query_timeout holds new reads back: one runs after the long read, one with less time is told so', async () => {
    const s = impatient;
    const { long, longEnded } = await dueWhileReading(s, 6000);
    await new Promise((r) => setTimeout(r, 600)); // past its patience
    const behind = s.svc.store.readColumns('SELECT 42', 30_000);
    const behindAnswered = settledAt(behind);
    const started = Date.now();
    const late = await s.svc.store.readColumns('SELECT 42', 500).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(QueryTimeout);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(await long).toBeInstanceOf(QueryTimeout);
    expect((await behind)[0]).toEqual([42]);
    expect(await behindAnswered).toBeGreaterThanOrEqual(await longEnded);
    await foldedWithin(s, 10_000);
    expect(s.svc.store.db.reopens).toBe(0);
    expect(s.backgroundErrors).toEqual([]);
  }, 60_000);

  it('keeps the WAL folded under steady ingest from many clients, every batch acknowledged and counted', async () => {
    const s = patient;
    const before = await s.count();
    let batches = 0;
    let maxWal = 0;
    const deadline = Date.now() + 4000;
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async (_, client) => {
        const seen: number[] = [];
        while (Date.now() < deadline) {
          seen.push(await s.ingest(1000 + client));
          batches++;
          maxWal = Math.max(maxWal, s.walBytes());
        }
        return seen;
      }),
    );
    expect(statuses.flat().every((status) => status === 200)).toBe(true);
    // Enough WAL for several checkpoints, or the bound below says nothing.
    expect(batches).toBeGreaterThanOrEqual(24);
    expect(s.backgroundErrors).toEqual([]);
    // Folded as it passed the threshold, give or take the batches in flight then.
    expect(maxWal).toBeLessThan(THRESHOLD + 8 * (THRESHOLD / 2));
    expect(await s.count()).toBe(before + batches * 2000);
    expect(s.svc.store.db.reopens).toBe(0);
  }, 60_000);
});

describe('a read that ignored its interrupt', () => {
  it('holds no read back while a checkpoint is due, is not checkpointed beside, and does not hold up shutdown', async () => {
    const own = await start(300);
    // One expression DuckDB computes for seconds with no vector boundary to notice an interrupt at.
    const read = own.svc.store
      .readColumns(`SELECT levenshtein(repeat('ab', 25000), repeat('ba', 25000)) AS d`, 50)
      .catch((e: unknown) => e);
    expect(await read).toBeInstanceOf(QueryTimeout);
    expect(own.svc.store.db.statementRunning(), 'the statement stopped at its interrupt').toBe(true);
    // Past the threshold and the patience: the checkpoint is due and would hold new reads back.
    for (let b = 0; b < 6; b++) expect(await own.ingest(b)).toBe(200);
    await new Promise((r) => setTimeout(r, 600));
    expect((await own.svc.store.readColumns('SELECT 42', 2000))[0]).toEqual([42]);
    expect(own.svc.store.db.statementRunning(), 'the statement ended too soon').toBe(true);
    expect(own.walBytes(), 'the WAL was folded beside the statement').toBeGreaterThanOrEqual(THRESHOLD);
    await own.svc.stop();
    // Had the shutdown waited for the statement (seconds more), it would have ended by now.
    expect(own.svc.store.db.statementRunning(), 'shutdown waited for the read').toBe(true);
  }, 60_000);
});
