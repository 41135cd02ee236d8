import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN, serveProcess, tempDir } from '../../../support/helpers.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

async function serve(dataDir: string) {
  const p = await serveProcess(dataDir);
  children.push(p.child);
  return { child: p.child, url: p.url, exited: p.exited.then((e) => e.code) };
}

async function call(
  url: string,
  method: string,
  path: string,
  body?: string,
  token = ADMIN,
  contentType = 'application/json',
) {
  return fetch(`${url}${path}`, {
    method,
    body,
    headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
  });
}

describe('durability', () => {
  it('loses no acknowledged event across repeated kill -9, and never keeps half a batch', async () => {
    const dataDir = tempDir('ferry-crash-');
    let { child, url } = await serve(dataDir);
    expect((await call(url, 'POST', '/v2/datasets', JSON.stringify({ name: 'crash' }))).status).toBe(200);
    const tokenRes = await call(
      url,
      'POST',
      '/v2/tokens',
      JSON.stringify({ name: 'w', datasetCapabilities: { crash: { ingest: ['create'] } } }),
    );
    const token = ((await tokenRes.json()) as { token: string }).token;

    const BATCH = 500;
    const acked = new Set<number>();
    const sent = new Set<number>();
    let batch = 0;
    for (let round = 0; round < 3; round++) {
      // Keep four writers busy, then kill the server while requests are in flight.
      let stop = false;
      const writer = async () => {
        while (!stop) {
          const b = batch++;
          sent.add(b);
          const body = Array.from({ length: BATCH }, (_, i) => JSON.stringify({ b, i, pad: 'x'.repeat(100) })).join(
            '\n',
          );
          try {
            const r = await call(url, 'POST', '/v1/ingest/crash', body, token, 'application/x-ndjson');
            if (r.status === 200 && ((await r.json()) as { ingested: number }).ingested === BATCH) acked.add(b);
          } catch {
            return; // connection died with the server
          }
        }
      };
      const writers = [writer(), writer(), writer(), writer()];
      await new Promise((r) => setTimeout(r, 400 + round * 200));
      child.kill('SIGKILL');
      stop = true;
      await Promise.all(writers);
      ({ child, url } = await serve(dataDir));
    }
    expect(acked.size).toBeGreaterThan(3);

    // Count events per batch straight from the database file after a clean shutdown.
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
    const { EventStore } = await import('../../../../src/service/store/event-store.js');
    const store = await EventStore.open({
      dataDir,
      memoryLimitBytes: 256 << 20,
      maxFieldsPerDataset: 100,
      defaultRetentionDays: 0,
      maxObjectBytes: 16 << 20,
    });
    try {
      const { table, fields } = store.schema('crash');
      const col = fields.find((f) => f.name === 'b')!.column;
      const rows = await store.db.all(`SELECT "${col}" AS b, count(*) AS n FROM "${table}" GROUP BY 1`);
      const counts = new Map(rows.map((r) => [Number(r.b), Number(r.n)]));
      for (const b of acked) expect(counts.get(b), `acknowledged batch ${b}`).toBe(BATCH);
      for (const [b, n] of counts) {
        expect(sent.has(b)).toBe(true);
        expect(n, `batch ${b} is all or nothing`).toBe(BATCH);
      }
    } finally {
      await store.close();
    }
  }, 120_000);

  it('finishes in-flight requests on SIGTERM and exits 0', async () => {
    const dataDir = tempDir('ferry-term-');
    const { child, url, exited } = await serve(dataDir);
    await call(url, 'POST', '/v2/datasets', JSON.stringify({ name: 'term' }));
    const token = (
      (await (
        await call(
          url,
          'POST',
          '/v2/tokens',
          JSON.stringify({ name: 'w', datasetCapabilities: { term: { ingest: ['create'] } } }),
        )
      ).json()) as { token: string }
    ).token;
    const body = Array.from({ length: 20000 }, (_, i) =>
      JSON.stringify({ i, msg: 'graceful shutdown test line' }),
    ).join('\n');
    const inflight = call(url, 'POST', '/v1/ingest/term', body, token, 'application/x-ndjson');
    await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGTERM');
    const r = await inflight;
    expect(r.status).toBe(200);
    expect(((await r.json()) as { ingested: number }).ingested).toBe(20000);
    expect(await exited).toBe(0);
  }, 60_000);
});
