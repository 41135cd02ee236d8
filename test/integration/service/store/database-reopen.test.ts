/**
 * DuckDB invalidates its database after a fatal error (a checkpoint that fails for memory, as the
 * hostile-input fuzz once caused, or for disk) and refuses every statement until it is opened again. The service
 * reopens it by itself: requests meanwhile answer 503 with Retry-After, every event acknowledged with 200
 * (before, during and after) is there once it is back, and /metrics says it happened.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderMetrics } from '../../../../src/agent/metrics.js';
import { DatabaseReopening, fatalReason } from '../../../../src/service/store/db.js';
import { seededRandom } from '../../../../bench/torture.js';
import { startTestService, testSeed, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let token: string;
beforeAll(async () => {
  // DuckDB's fault injection is a setting: this service leaves settings changeable (external access stays off).
  svc = await startTestService({}, undefined, { settingsUnlocked: true });
  token = await svc.apiToken();
  await svc.createDataset('kept');
});
afterAll(async () => svc?.stop());

/**
 * Fails the database as a checkpoint short of memory or disk does, with DuckDB's own fault injection for
 * checkpoints: FATAL Error, and the database invalidated.
 */
async function provokeFatal(where: string): Promise<unknown> {
  for (;;) {
    const e = await svc.store.db
      .use(async (c) => {
        await c.run(`SET debug_checkpoint_abort = '${where}'`);
        await c.run('CHECKPOINT');
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    // A checkpoint waits for no one: with a write transaction open it is refused, and tried again.
    if (!/Cannot CHECKPOINT/.test((e as Error)?.message ?? '')) return e;
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function ids(): Promise<Set<string>> {
  const r = await svc.call('POST', '/v1/query/_apl?format=tabular', {
    apl: "['kept'] | project id | take 100000",
  });
  expect(r.status).toBe(200);
  const t = ((await r.json()) as { tables: { columns: unknown[][] }[] }).tables[0]!;
  return new Set(t.columns[0] as string[]);
}

describe('a fatal database error', () => {
  it('reopens the database: 503 meanwhile, every acknowledged event and field kept, tokens and queries working after (seeded)', async () => {
    const { seed, rnd, replay } = testSeed(
      'FERRY_REOPEN_SEED',
      'npx vitest run test/integration/service/store/database-reopen.test.ts',
    );
    const acked: string[] = [];
    const ackedFields = new Set<string>();
    const refused: string[] = [];
    let stop = false;
    let unavailable = 0;
    // Writers send batches of random size and pace; some bring a new field, so a fatal error can land
    // in the middle of a schema change.
    const writers = Array.from({ length: 3 }, async (_, w) => {
      const mine = seededRandom(seed + w + 1);
      for (let n = 0; !stop; n++) {
        await new Promise((r) => setTimeout(r, Math.floor(mine() * 10)));
        const field = mine() < 0.2 ? `k${w}_${n}` : 'msg';
        const batch = Array.from({ length: 50 + Math.floor(mine() * 250) }, (_, i) => ({
          id: `${w}.${n}.${i}`,
          [field]: 'x'.repeat(100),
        }));
        const r = await svc.call('POST', '/v1/ingest/kept', batch.map((e) => JSON.stringify(e)).join('\n'), token, {
          'content-type': 'application/x-ndjson',
        });
        if (r.status === 200) {
          acked.push(...batch.map((e) => e.id));
          ackedFields.add(field);
        } else if (r.status === 503) unavailable++;
        if (r.status !== 200) {
          const body = (await r.json()) as { code: number; message: string };
          // Refused while the database reopens: a retryable 503 that says why.
          if (r.status !== 503 || r.headers.get('retry-after') !== '5' || !/reopened/.test(body.message))
            refused.push(`${r.status} ${JSON.stringify(body)}`);
        }
      }
    });
    const ABORTS = ['before_truncate', 'before_header', 'after_free_list_write'];
    try {
      for (let round = 0; round < 3; round++) {
        const before = acked.length;
        const wait = 500 + Math.floor(rnd() * 3000);
        while (acked.length < before + wait) await new Promise((r) => setTimeout(r, 10));
        const fatal = await provokeFatal(ABORTS[Math.floor(rnd() * ABORTS.length)]!);
        expect(fatal, replay).toBeInstanceOf(DatabaseReopening);
        expect((fatal as Error).message).toMatch(/checkpoint/i);
        // Reopening takes a moment: a request now is told to come back.
        expect(svc.database().reopening).toBe(true);
        const meanwhile = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['kept'] | count" });
        expect(meanwhile.status, replay).toBe(503);
        expect(meanwhile.headers.get('retry-after')).toBe('5');
        for (let i = 0; i < 200 && svc.database().reopening; i++) await new Promise((r) => setTimeout(r, 50));
        expect(svc.database(), replay).toMatchObject({
          reopening: false,
          reopens: round + 1,
          lastFatal: { at: expect.any(String), error: expect.stringMatching(/checkpoint/i) },
        });
      }
      const before = acked.length;
      while (acked.length < before + 1000) await new Promise((r) => setTimeout(r, 10));
    } finally {
      stop = true;
      await Promise.all(writers);
    }

    expect(refused.slice(0, 3), replay).toEqual([]);
    console.log(`acknowledged ${acked.length} events; ${unavailable} batches answered 503 while the database reopened`);
    const stored = await ids();
    const lost = acked.filter((id) => !stored.has(id));
    expect(lost.length, `lost, first: ${lost.slice(0, 3).join(' ')}; ${replay}`).toBe(0);
    const fields = (await (await svc.call('GET', '/v2/datasets/kept/fields')).json()) as { name: string }[];
    const names = new Set(fields.map((f) => f.name));
    expect(
      [...ackedFields].filter((f) => !names.has(f)),
      replay,
    ).toEqual([]);
    // The reopened database works as before, with everything held beside it.
    expect((await svc.call('GET', '/v2/datasets/kept/fields', undefined, token)).status).toBe(200);
    expect((await svc.call('GET', '/v2/tokens')).status).toBe(200);
    const q = await svc.call(
      'POST',
      '/v1/query/_apl?format=tabular',
      { apl: "['kept'] | summarize dcount(id)" },
      token,
    );
    expect(q.status).toBe(200);
    expect(renderMetrics(undefined, svc)).toContain('ferry_service_database_reopens_total 3');
    expect(renderMetrics(undefined, svc)).toContain('ferry_service_database_reopening 0');
    // And after a restart on the same files.
    await svc.close();
    svc = await startTestService({}, svc.dataDir, { settingsUnlocked: true });
    const again = await ids();
    expect(acked.filter((id) => !again.has(id))).toEqual([]);
  });

  it('a reopening that fails is tried again until it succeeds, refusing requests meanwhile', async () => {
    const before = svc.database().reopens;
    // The first attempt fails as a reopening on a full disk would, after the file is open again.
    let failures = 1;
    svc.store.db.afterReopen(async () => {
      if (failures-- > 0) throw new Error('No space left on device');
    });
    const events: string[] = [];
    const told = svc.store.db.onReopen;
    svc.store.db.onReopen = (e) => {
      events.push(`${e.phase}: ${e.error}`);
      told(e);
    };
    expect(await provokeFatal('before_header')).toBeInstanceOf(DatabaseReopening);
    let checked = 0;
    for (let i = 0; i < 100 && svc.database().reopening; i++) {
      if (events.length === 2) {
        checked++;
        const meanwhile = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['kept'] | count" });
        expect(meanwhile.status).toBe(503);
        // A refusal is audited without the database; its record waits for the database rather than being lost.
        if (checked === 1) {
          expect((await svc.call('POST', '/v2/rbac/roles', { name: 'during' }, token)).status).toBe(403);
          await svc.records[0]!.flush();
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(events).toEqual([
      expect.stringMatching(/^start: .*checkpoint/i),
      'failed: No space left on device',
      expect.stringMatching(/^done: .*checkpoint/i),
    ]);
    expect(checked).toBeGreaterThan(0);
    expect(svc.database().reopens).toBe(before + 1);
    const q = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['kept'] | count" });
    expect(q.status).toBe(200);
    const audited = async () => {
      const r = await svc.call('POST', '/v1/query/_apl?format=tabular', {
        apl: "['axiom-audit'] | where action == 'POST /v2/rbac/roles' and status == 403 | count",
      });
      return ((await r.json()) as { tables: { columns: number[][] }[] }).tables[0]!.columns[0]![0];
    };
    for (let i = 0; i < 50 && (await audited()) !== 1; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await audited()).toBe(1);
    expect(svc.recordFailures()).toEqual([]);
  });

  it('is named by the error that invalidated the database, whichever statement reports it first', () => {
    const original = 'Failed to create checkpoint because of error: Could not write file "x": No space left on device';
    const refused = `FATAL Error: Failed: database has been invalidated because of a previous fatal error. The database must be restarted prior to being used again.\nOriginal error: "${original}"`;
    expect(fatalReason(new Error(refused))).toBe(original);
    expect(fatalReason(new Error(`FATAL Error: ${original}`))).toBe(`FATAL Error: ${original}`);
  });
});
