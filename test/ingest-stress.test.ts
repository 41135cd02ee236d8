/**
 * A 200 from ingest means the events are durable and readable as sent, under any interleaving: many
 * concurrent clients send seeded random shapes (new fields, type changes that widen, nested objects,
 * arrays, nulls) into the same and different datasets, across a restart of the service; afterwards every
 * acknowledged event is read back and compared field by field with what was sent. The seed is random
 * unless FERRY_STRESS_SEED is set, and is printed in any failure.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../bench/torture.js';
import { startTestService, tempDir, testSeed, type TestService } from './helpers.js';

type Sent = Record<string, unknown> & { _id: string };

/**
 * Field families, each with the values it may take and how a value reads back once the field has its
 * final type: `n*` integers and floats (integer and float widen to float), `s*` strings that sometimes
 * get an integer or a boolean (the field widens to string: JSON text), `o*` objects (flattened to
 * `o*.x`, `o*.y`), `a*` arrays (kept whole), and null anywhere.
 */
function randomEvent(rnd: () => number, id: string): Sent {
  const pick = (n: number) => Math.floor(rnd() * n);
  const e: Sent = { _id: id };
  const fields = 1 + pick(6);
  for (let i = 0; i < fields; i++) {
    const family = 'nsoa'[pick(4)]!;
    const name = `${family}${pick(12)}`;
    if (rnd() < 0.08) {
      e[name] = null;
      continue;
    }
    switch (family) {
      case 'n':
        e[name] = rnd() < 0.5 ? pick(1000) - 500 : Math.round(rnd() * 1e6) / 1e3 + 0.5;
        break;
      case 's':
        e[name] = rnd() < 0.8 ? `text ${pick(1e6)}` : rnd() < 0.5 ? pick(100) : rnd() < 0.5;
        break;
      case 'o':
        e[name] = { x: pick(100), y: `y${pick(100)}` };
        break;
      case 'a':
        e[name] = Array.from({ length: pick(4) }, () => (rnd() < 0.5 ? pick(10) : `v${pick(10)}`));
        break;
    }
  }
  return e;
}

/** What a sent field reads back as, given the stored event (flattened objects, widened strings). */
function mismatch(sent: Sent, got: Record<string, unknown>): string | undefined {
  for (const [k, v] of Object.entries(sent)) {
    if (k === '_id') continue;
    if (v === null) {
      const flat = Object.keys(got).filter((g) => g === k || g.startsWith(`${k}.`));
      if (flat.some((g) => got[g] !== null && got[g] !== undefined))
        return `${k}: sent null, got ${JSON.stringify(flat.map((g) => got[g]))}`;
      continue;
    }
    if (k.startsWith('o')) {
      const o = v as { x: number; y: string };
      if (got[`${k}.x`] !== o.x || got[`${k}.y`] !== o.y)
        return `${k}: sent ${JSON.stringify(o)}, got x=${JSON.stringify(got[`${k}.x`])} y=${JSON.stringify(got[`${k}.y`])}`;
    } else if (k.startsWith('a')) {
      if (JSON.stringify(got[k]) !== JSON.stringify(v))
        return `${k}: sent ${JSON.stringify(v)}, got ${JSON.stringify(got[k])}`;
    } else if (k.startsWith('n')) {
      if (typeof got[k] !== 'number' || Math.abs((got[k] as number) - (v as number)) > 1e-9)
        return `${k}: sent ${JSON.stringify(v)}, got ${JSON.stringify(got[k])}`;
    } else {
      // A string field that also saw an integer or a boolean holds each value's JSON text.
      const expected = typeof v === 'string' ? v : JSON.stringify(v);
      const ok = got[k] === expected || (typeof v !== 'string' && got[k] === v);
      if (!ok) return `${k}: sent ${JSON.stringify(v)}, got ${JSON.stringify(got[k])}`;
    }
  }
  return undefined;
}

let svc: TestService | undefined;
afterAll(async () => svc?.stop());

describe('ingest under concurrency (seeded stress)', () => {
  it('every acknowledged event reads back as sent: concurrent clients, random shapes, same and different datasets, across a restart', async () => {
    const { seed, replay: tag } = testSeed('FERRY_STRESS_SEED', 'npx vitest run test/ingest-stress.test.ts');
    const dataDir = tempDir();
    svc = await startTestService({}, dataDir);
    const datasets = ['stress-a', 'stress-b', 'stress-c'];
    for (const d of datasets) await svc.createDataset(d);
    let token = await svc.apiToken();
    const acknowledged = new Map<string, Sent[]>(datasets.map((d) => [d, []]));
    let restarting: Promise<void> | undefined;
    let failedSends = 0;

    const client = async (c: number) => {
      const rnd = seededRandom(seed + c * 7919);
      const pick = (n: number) => Math.floor(rnd() * n);
      for (let b = 0; b < 14; b++) {
        const dataset = datasets[pick(datasets.length)]!;
        const events = Array.from({ length: pick(3) === 0 ? 2000 + pick(3000) : 1 + pick(50) }, (_, i) =>
          randomEvent(rnd, `c${c}-b${b}-e${i}`),
        );
        await restarting;
        const current = svc!;
        try {
          const r = await current.call(
            'POST',
            `/v1/ingest/${dataset}`,
            gzipSync(events.map((e) => JSON.stringify(e)).join('\n')),
            token,
            { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
          );
          const body = (await r.json()) as { ingested?: number; failed?: number; message?: string };
          expect(r.status, `${tag}: ${body.message}`).toBe(200);
          expect(body, tag).toMatchObject({ ingested: events.length, failed: 0 });
          acknowledged.get(dataset)!.push(...events);
        } catch (e) {
          // Only a request cut by the restart may fail; its batch is not acknowledged, so not checked.
          if (!(e instanceof TypeError)) throw e;
          failedSends++;
        }
        await new Promise((r) => setTimeout(r, pick(20)));
      }
    };
    const clients = Array.from({ length: 6 }, (_, c) => client(c));
    // Halfway, the service restarts on the same data dir (its known fields are read again from the catalog).
    await new Promise((r) => setTimeout(r, 1500));
    restarting = (async () => {
      const old = svc!;
      await old.close();
      svc = await startTestService({}, dataDir);
      token = await svc.apiToken();
    })();
    await restarting;
    await Promise.all(clients);

    let checked = 0;
    for (const d of datasets) {
      const sent = acknowledged.get(d)!;
      const stored = await svc.store.readEvents(d, { limit: 10_000_000 });
      const byId = new Map(stored.map((e) => [e._id as string, e]));
      const problems: string[] = [];
      for (const e of sent) {
        const got = byId.get(e._id);
        const why = got ? mismatch(e, got) : 'missing';
        if (why) problems.push(`${d} ${e._id}: ${why}`);
        checked++;
      }
      expect(
        problems.slice(0, 5),
        `${tag}: ${problems.length} of ${sent.length} events in ${d} do not read back as sent`,
      ).toEqual([]);
    }
    console.log(
      `ingest stress: ${tag}: ${checked} acknowledged events compared field by field; ${failedSends} send(s) cut by the restart`,
    );
    expect(checked).toBeGreaterThan(10_000);
  }, 180_000);
});
