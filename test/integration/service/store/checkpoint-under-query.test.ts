/**
 * DuckDB's checkpoint pins the blocks it writes, and one that cannot (a query holds all of memory_limit)
 * is fatal: the database is invalidated and every request answers 503 until it is reopened (the project's
 * CI caught the hostile-input fuzz doing it). So the store's checkpoint waits for the reads running, and
 * reads that arrive meanwhile wait for it: a query counts the wait in its query_timeout. Ingests pass.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryTimeout } from '../../../../src/service/store/db.js';
import { startTestService, type TestService } from '../../../support/helpers.js';

const THRESHOLD = 512 * 1024;

let svc: TestService;
let token: string;
const backgroundErrors: string[] = [];
beforeAll(async () => {
  svc = await startTestService({ checkpointThresholdBytes: THRESHOLD, queryTimeoutMs: 30_000 });
  // What the service logs as "checkpoint failed".
  svc.store.opts.onBackgroundError = (err, what) => backgroundErrors.push(`${what}: ${(err as Error).message}`);
  await svc.createDataset('events');
  token = await svc.apiToken();
});
afterAll(async () => svc?.stop());

const walBytes = () => {
  try {
    return statSync(join(svc.dataDir, 'ferry.duckdb.wal')).size;
  } catch {
    return 0;
  }
};

/** About a quarter of THRESHOLD of WAL per batch. */
async function ingest(batch: number): Promise<number> {
  const events = Array.from({ length: 2000 }, (_, i) => ({ batch, i, msg: `event ${i} of batch ${batch}`.repeat(2) }));
  const r = await svc.call('POST', '/v1/datasets/events/ingest', events, token);
  return r.status;
}

async function count(): Promise<number> {
  const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['events'] | count" }, token);
  expect(r.status).toBe(200);
  return Number(((await r.json()) as { tables: { columns: unknown[][] }[] }).tables[0]!.columns[0]![0]);
}

describe("the store's checkpoint", () => {
  it('waits for the query running, and a query arriving meanwhile waits for it within its time', async () => {
    const before = await count();
    // Runs until its 4 s are up: DuckDB stops it between vectors.
    let queryEnded = 0;
    const query = svc.store.readColumns('SELECT sum(hash(i)) FROM range(100000000000) t(i)', 4000).then(
      () => 'answered',
      (e: unknown) => (e instanceof QueryTimeout ? 'timed out' : (e as Error).message),
    );
    void query.finally(() => (queryEnded = Date.now()));
    await new Promise((r) => setTimeout(r, 200));
    // Past the threshold: the checkpoint is due, and waits.
    for (let b = 0; b < 4; b++) expect(await ingest(b)).toBe(200);
    expect(walBytes()).toBeGreaterThanOrEqual(THRESHOLD);
    const second = svc.store.readColumns('SELECT 42', 30_000);
    const secondAnswered = second.then(() => Date.now());
    // Time enough for a checkpoint of this WAL, had it not waited.
    await new Promise((r) => setTimeout(r, 1000));
    expect(queryEnded, 'the long query ended too soon').toBe(0);
    expect(walBytes(), 'the WAL was folded while a query ran').toBeGreaterThanOrEqual(THRESHOLD);
    expect(await query).toBe('timed out');
    expect((await second)[0]).toEqual([42]);
    // The query that came while the checkpoint waited ran after it.
    expect(await secondAnswered).toBeGreaterThanOrEqual(queryEnded);
    const until = Date.now() + 10_000;
    while (walBytes() >= THRESHOLD) {
      expect(Date.now(), 'the WAL was never folded').toBeLessThan(until);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await count()).toBe(before + 4 * 2000);
    expect(svc.store.db.reopens).toBe(0);
    expect(backgroundErrors).toEqual([]);
  }, 60_000);

  it('a query waiting for a checkpoint past its time limit is told so', async () => {
    const long = svc.store.readColumns('SELECT sum(hash(i)) FROM range(100000000000) t(i)', 3000).catch((e) => e);
    await new Promise((r) => setTimeout(r, 200));
    for (let b = 0; b < 4; b++) expect(await ingest(100 + b)).toBe(200);
    // The checkpoint waits for `long`; this one waits behind it and runs out of its 500 ms.
    const started = Date.now();
    const late = await svc.store.readColumns('SELECT 42', 500).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(QueryTimeout);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(await long).toBeInstanceOf(QueryTimeout);
  }, 60_000);

  it('keeps the WAL folded under steady ingest from many clients, every batch acknowledged and counted', async () => {
    backgroundErrors.length = 0;
    const before = await count();
    let batches = 0;
    let maxWal = 0;
    const deadline = Date.now() + 4000;
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async (_, client) => {
        const seen: number[] = [];
        while (Date.now() < deadline) {
          seen.push(await ingest(1000 + client));
          batches++;
          maxWal = Math.max(maxWal, walBytes());
        }
        return seen;
      }),
    );
    expect(statuses.flat().every((s) => s === 200)).toBe(true);
    expect(backgroundErrors).toEqual([]);
    // Folded as it passed the threshold, give or take the batches in flight then.
    expect(maxWal).toBeLessThan(THRESHOLD + 8 * (THRESHOLD / 2));
    expect(await count()).toBe(before + batches * 2000);
    expect(svc.store.db.reopens).toBe(0);
  }, 60_000);
});

describe('shutting down while a checkpoint waits for a read that ignored its interrupt', () => {
  it('does not wait for the read (nor the checkpoint behind it)', async () => {
    const own = await startTestService({ checkpointThresholdBytes: THRESHOLD });
    const ownToken = await own.apiToken();
    await own.createDataset('events');
    // One expression over a long list: DuckDB sees no vector boundary to stop at for seconds.
    const read = own.store
      .readColumns('SELECT list_sum(list_transform(range(240000000), x -> (x * 2) % 7 + (x * 3) % 11)) AS s', 50)
      .catch((e: unknown) => e);
    expect(await read).toBeInstanceOf(QueryTimeout);
    expect(own.store.db.statementRunning(), 'the statement stopped at its interrupt').toBe(true);
    // Past the threshold: a checkpoint is due, and waits for the read.
    const events = Array.from({ length: 2000 }, (_, i) => ({ i, msg: `event ${i}`.repeat(8) }));
    for (let b = 0; b < 4; b++)
      expect((await own.call('POST', '/v1/datasets/events/ingest', events, ownToken)).status).toBe(200);
    await own.stop();
    // Had the shutdown waited for the statement (seconds more), it would have ended by now.
    expect(own.store.db.statementRunning(), 'shutdown waited for the read').toBe(true);
  }, 60_000);
});
