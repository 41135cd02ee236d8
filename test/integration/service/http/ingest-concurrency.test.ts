/**
 * A 200 from ingest means every event is stored as sent, however batches interleave: concurrent batches
 * into a new dataset (or one whose known fields were forgotten, as after a restart) each plan from their
 * own view of the schema.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  token = await svc.apiToken();
});
afterAll(async () => svc?.stop());

function body(from: number, n: number, tag: string): Uint8Array {
  const lines: string[] = [];
  for (let i = from; i < from + n; i++) lines.push(JSON.stringify({ i, msg: `${tag} ${i}`, nested: { k: i % 7 } }));
  return gzipSync(lines.join('\n'));
}

describe('concurrent ingest', () => {
  it('a large batch and small ones with the same new fields, sent at once, are all stored with their values', async () => {
    for (let round = 0; round < 8; round++) {
      const ds = `race-${round}`;
      await svc.createDataset(ds);
      // The small ones start while the big one is being discovered, each a little later.
      const sends = [
        body(0, 20_000, 'big'),
        ...Array.from({ length: 6 }, (_, k) => body(20_000 + k * 10, 10, 'small')),
      ].map(async (b, k) => {
        await new Promise((r) => setTimeout(r, k * (5 + round * 4)));
        const r = await svc.call('POST', `/v1/ingest/${ds}`, b, token, {
          'content-type': 'application/x-ndjson',
          'content-encoding': 'gzip',
        });
        expect(r.status).toBe(200);
        return ((await r.json()) as { ingested: number }).ingested;
      });
      expect((await Promise.all(sends)).reduce((a, n) => a + n, 0)).toBe(20_060);
      const events = await svc.store.readEvents(ds, { limit: 100_000 });
      expect(events).toHaveLength(20_060);
      const bad = events.filter(
        (e) =>
          typeof e.i !== 'number' ||
          e.msg !== `${(e.i as number) < 20_000 ? 'big' : 'small'} ${e.i as number}` ||
          e['nested.k'] !== (e.i as number) % 7,
      );
      expect(bad.slice(0, 3), `round ${round}: ${bad.length} events stored without their values`).toEqual([]);
    }
  });
});
