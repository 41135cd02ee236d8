/**
 * The same queries asked again and again while events arrive, fields appear and a field changes its type
 * answer what the data holds at that moment, never what an earlier plan saw. (A DuckDB statement kept
 * prepared does not: its plan folds what the table's statistics said when it was made, so a filter no row
 * then passed stays empty. This test found it, and no plan is kept.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestService, testSeed, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let ingestToken: string;
// Fixed bounds: the same query is the same SQL text every time it is asked.
const RANGE = { startTime: '2000-01-01T00:00:00Z', endTime: '2100-01-01T00:00:00Z' };

beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('cache');
  ingestToken = await svc.apiToken();
});

const ingest = (dataset: string, events: object[]) =>
  svc.call('POST', `/v1/ingest/${dataset}`, events, ingestToken).then((r) => r.status);
afterAll(async () => svc.stop());

async function columns(apl: string): Promise<unknown[][]> {
  const r = await svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl, ...RANGE });
  const json = (await r.json()) as { tables: { columns: unknown[][] }[] };
  if (r.status !== 200) throw new Error(`${apl}: ${r.status} ${JSON.stringify(json)}`);
  return json.tables[0]!.columns;
}

const count = async (apl: string) => Number((await columns(apl))[0]![0]);

async function byKey(): Promise<Record<string, number>> {
  const [keys, counts] = await columns("['cache'] | summarize n = count() by tostring(k)");
  return Object.fromEntries(keys!.map((k, i) => [String(k), Number(counts![i])]));
}

it('answers repeated queries with the data of the moment, through new fields and a type change', async () => {
  const { rnd, replay } = testSeed(
    'FERRY_CACHE_SEED',
    'npx vitest run test/integration/service/query/repeated-queries.test.ts',
  );
  const held: Record<string, unknown>[] = [];
  for (let round = 0; round < 10; round++) {
    const batch = Array.from({ length: 1 + Math.floor(rnd() * 40) }, (_, i) => ({
      _time: new Date(Date.UTC(2024, 0, 1, 0, round, i)).toISOString(),
      // From round 6 on, k is a number too: the field's type widens.
      k: round >= 6 && rnd() < 0.5 ? Math.floor(rnd() * 3) : ['a', 'b', 'c'][Math.floor(rnd() * 3)],
      // A field of its own from round 3 on: the table gains columns under the prepared statements.
      ...(round >= 3 ? { [`f${round}`]: round } : {}),
    }));
    expect(await ingest('cache', batch), replay).toBe(200);
    held.push(...batch);
    const expected: Record<string, number> = {};
    for (const e of held) expected[String(e.k)] = (expected[String(e.k)] ?? 0) + 1;
    // Each text three times (the second prepares it, the third runs the prepared statement), and four at
    // once besides, on whichever connections are free.
    for (let i = 0; i < 3; i++) {
      expect(await count("['cache'] | count"), replay).toBe(held.length);
      expect(await count("['cache'] | where k == 'a' | count"), replay).toBe(expected.a ?? 0);
      expect(await byKey(), replay).toEqual(expected);
      if (round >= 3) expect(await count("['cache'] | where isnotnull(f3) | count"), replay).toBe(batchesFrom(held, 3));
    }
    const together = await Promise.all(Array.from({ length: 4 }, () => count("['cache'] | count")));
    expect(together, replay).toEqual([held.length, held.length, held.length, held.length]);
  }
});

it('gives each of many queries asked at once while events arrive a count the data had', async () => {
  const { rnd, replay } = testSeed(
    'FERRY_CACHE_SEED',
    'npx vitest run test/integration/service/query/repeated-queries.test.ts',
  );
  await svc.createDataset('stream');
  expect(await ingest('stream', [{ _time: '2024-01-02T00:00:00Z', b: 0 }]), replay).toBe(200);
  let acknowledged = 1;
  let sent = 1;
  const answers: { low: number; got: number; high: number }[] = [];
  const writer = (async () => {
    for (let b = 0; b < 15; b++) {
      const n = 1 + Math.floor(rnd() * 50);
      sent += n;
      const batch = Array.from({ length: n }, (_, i) => ({
        _time: new Date(Date.UTC(2024, 0, 2, 0, b, i)).toISOString(),
        b,
      }));
      expect(await ingest('stream', batch), replay).toBe(200);
      acknowledged += n;
    }
  })();
  const ask = async () => {
    for (let i = 0; i < 20; i++) {
      const low = acknowledged;
      const got = await count("['stream'] | where b >= 0 | count");
      answers.push({ low, got, high: sent });
    }
  };
  await Promise.all([writer, ask(), ask(), ask()]);
  // Each answer holds at least what was acknowledged before it was asked, and no more than was sent.
  for (const a of answers) expect(a.got >= a.low && a.got <= a.high, `${JSON.stringify(a)} ${replay}`).toBe(true);
  expect(await count("['stream'] | where b >= 0 | count"), replay).toBe(acknowledged);
});

it('a query text asked again is checked against each caller: one who may not read its dataset is refused, whoever asked it first', async () => {
  await svc.createDataset('kept-a');
  await svc.createDataset('kept-b');
  expect(await ingest('kept-a', [{ _time: '2024-01-01T00:00:00Z', v: 1 }])).toBe(200);
  const readsA = await svc.apiToken({ 'kept-a': { query: ['read'] } });
  const readsB = await svc.apiToken({ 'kept-b': { query: ['read'] } });
  const apl = "['kept-a'] | summarize total = sum(v)";
  const ask = (token: string) => svc.call('POST', '/v1/query/_apl?format=tabular', { apl, ...RANGE }, token);
  // Asked at once by both, then again in turn: each answer is its caller's, whatever was kept.
  const [first, refused] = await Promise.all([ask(readsA), ask(readsB)]);
  expect(first.status).toBe(200);
  expect(refused.status).toBe(403);
  expect(await refused.json()).toEqual({
    code: 403,
    message: 'Forbidden: this token lacks the query|read capability on dataset "kept-a"',
  });
  for (const [token, status] of [
    [readsB, 403],
    [readsA, 200],
    [readsB, 403],
  ] as const)
    expect((await ask(token)).status).toBe(status);

  // A query that reads the clock is bound at each request: its time moves.
  const now = async () => (await columns('print t = now()'))[0]![0] as string;
  const before = await now();
  await new Promise((r) => setTimeout(r, 5));
  expect(Date.parse(await now())).toBeGreaterThan(Date.parse(before));
});

function batchesFrom(events: Record<string, unknown>[], round: number): number {
  return events.filter((e) => `f${round}` in e).length;
}
