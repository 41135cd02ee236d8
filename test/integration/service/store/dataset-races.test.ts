/**
 * Requests racing changes of a dataset's table. Queries racing batches that add fields, batches that widen
 * a field's type, and the dataset's deletion answer as if they ran wholly before or after each change:
 * every row with all its fields, no 400 for types the query did not write, no 500 for a table dropped
 * under it. Ingest and management calls racing the deletion answer as before it, or 404 after it, and
 * write nothing into a dataset made again under the same name. The seed chooses the changes and their pace.
 * A failure names its seed: FERRY_RACE_SEED=<seed> npx vitest run test/integration/service/store/dataset-races.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, testSeed, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  token = await svc.apiToken();
});
afterAll(async () => svc?.stop());

interface Table {
  fields: { name: string }[];
  columns: unknown[][];
}

/** Values that widen `v` from integer, each to a wider column type. */
const WIDER = [2.5, 'text', [1, 2], { a: 1 }] as const;

const seeded = () => testSeed('FERRY_RACE_SEED', 'npx vitest run test/integration/service/store/dataset-races.test.ts');

describe('requests racing changes of a dataset (seeded)', () => {
  it('answer every row with its fields, through added fields, widened types and the dataset deleted', async () => {
    const { rnd, replay } = seeded();
    const wrong: string[] = [];
    const answered: Record<number, number> = {};
    for (let round = 0; round < 8; round++) {
      const ds = `race-${round}`;
      await svc.createDataset(ds);
      const send = async (event: object) => {
        const r = await svc.call('POST', `/v1/ingest/${ds}`, JSON.stringify(event), token, {
          'content-type': 'application/x-ndjson',
        });
        expect(r.status, replay).toBe(200);
      };
      await send({ b: 0, k0: 0, v: 1 });
      let deleting = false;
      let done = false;
      const queries = [
        `['${ds}'] | project-away _sysTime`,
        `['${ds}'] | where v > 0 | count`,
        `['${ds}'] | summarize sum(v), max(v)`,
        `['${ds}'] | extend w = v * 2 | project w, b`,
      ];
      const readers = queries.map(async (apl) => {
        while (!done) {
          const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl });
          answered[r.status] = (answered[r.status] ?? 0) + 1;
          if (r.status === 404 && deleting) return;
          if (r.status !== 200) {
            wrong.push(`${apl}: ${r.status} ${await r.text()}`);
            return;
          }
          // Batch b is {b, k<b>: b}: a row of batch b without k<b> was read on an older schema.
          const t = ((await r.json()) as { tables: Table[] }).tables[0]!;
          const names = t.fields.map((f) => f.name);
          const bs = names.includes('k0') ? t.columns[names.indexOf('b')]! : [];
          for (const [i, b] of bs.entries()) {
            if (t.columns[names.indexOf(`k${String(b)}`)]?.[i] !== b)
              wrong.push(`${apl}: a row of batch ${String(b)} without k${String(b)} (fields ${names.join(',')})`);
          }
        }
      });
      const changes = 4 + Math.floor(rnd() * 8);
      let widened = 0;
      for (let b = 1; b <= changes; b++) {
        await new Promise((r) => setTimeout(r, Math.floor(rnd() * 15)));
        // Each batch adds k<b>; some also widen v one step.
        const widen = widened < WIDER.length && rnd() < 0.5;
        await send(widen ? { b, [`k${b}`]: b, v: WIDER[widened++] } : { b, [`k${b}`]: b, v: b });
      }
      if (rnd() < 0.5) {
        deleting = true;
        expect((await svc.call('DELETE', `/v2/datasets/${ds}`)).status, replay).toBe(204);
      }
      done = true;
      await Promise.all(readers);
    }
    expect(answered[200], replay).toBeGreaterThan(50);
    expect(wrong.slice(0, 5), replay).toEqual([]);
  });

  it('ingest and management calls racing the deletion answer 2xx before it and 404 after it, and leave nothing behind', async () => {
    const { rnd, replay } = seeded();
    const wrong: string[] = [];
    for (let round = 0; round < 8; round++) {
      const ds = `gone-${round}`;
      const base = `/v2/datasets/${ds}`;
      await svc.createDataset(ds);
      let deleted = false;
      let done = false;
      const ingest = async (k: number, n: number) => {
        const lines = Array.from({ length: 100 }, (_, i) =>
          JSON.stringify({ [`f${k}_${n % 4}`]: i, v: k % 2 ? 'x' : i }),
        );
        return svc.call('POST', `/v1/ingest/${ds}`, lines.join('\n'), token, {
          'content-type': 'application/x-ndjson',
        });
      };
      expect((await ingest(0, 0)).status, replay).toBe(200); // field v exists before the race
      const calls: (() => Promise<Response>)[] = [
        () => svc.call('GET', `${base}/fields`),
        () => svc.call('PUT', base, { description: `round ${round}` }),
        () => svc.call('POST', `${base}/trim`, { maxDuration: '1h' }),
        () => svc.call('POST', `${base}/mapfields`, { name: `m${Math.floor(rnd() * 1e6)}` }),
        () => svc.call('PUT', `${base}/fields/v`, { description: 'v' }),
        () => {
          deleted = true;
          return svc.call('DELETE', base);
        },
      ];
      const clients = Array.from({ length: 4 }, async (_, k) => {
        for (let n = 0; !done; n++) {
          const r = k < 2 ? await ingest(k, n) : await calls[Math.floor(rnd() * calls.length)]!();
          // A second DELETE may race the first: one of them answers 204, the other 404.
          if (r.status === 404 && deleted) return;
          if (r.status >= 300 && !(r.status === 404 && deleted))
            wrong.push(`round ${round}, client ${k}: ${r.status} ${await r.text()}`);
        }
      });
      await new Promise((r) => setTimeout(r, 10 + Math.floor(rnd() * 60)));
      deleted = true;
      const del = await svc.call('DELETE', base);
      expect([204, 404], replay).toContain(del.status);
      done = true;
      await Promise.all(clients);
      expect((await svc.call('GET', base)).status, replay).toBe(404);
      // Made again, the dataset starts empty: no batch of the old one landed in it.
      await svc.createDataset(ds);
      const count = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: `['${ds}'] | count` });
      const t = ((await count.json()) as { tables: Table[] }).tables[0]!;
      expect(t.columns[0], replay).toEqual([0]);
      expect((await svc.call('GET', `${base}/fields`)).status, replay).toBe(200);
    }
    expect(wrong.slice(0, 5), replay).toEqual([]);
  });
});
