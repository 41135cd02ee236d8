/**
 * GET /v1/datasets/{id}/info (axiom-rs's datasets.info): events, time span, bytes received and stored, and
 * fields, true after concurrent ingest and after a restart.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { startTestService, tempDir, type TestService } from '../../../support/helpers.js';
import { metricsBody } from '../../../support/otlp-metrics.js';

const NDJSON = { 'content-type': 'application/x-ndjson' };

interface Info {
  name: string;
  numEvents: number;
  numFields: number;
  inputBytes: number;
  compressedBytes: number;
  minTime: string | null;
  maxTime: string | null;
  created: string;
  fields: { name: string; type: string }[];
}

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function info(svc: TestService, name: string, v = 'v1'): Promise<Info> {
  const r = await svc.call('GET', `/${v}/datasets/${name}/info`);
  expect(r.status, await r.clone().text()).toBe(200);
  return (await r.json()) as Info;
}

describe('dataset info', () => {
  it('counts events, the time span and the bytes received under concurrent ingest, and keeps them over a restart', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    let svc = await startTestService({}, dataDir);
    try {
      await svc.createDataset('web');
      const empty = await info(svc, 'web');
      expect(empty).toMatchObject({
        name: 'web',
        numEvents: 0,
        numFields: 2,
        inputBytes: 0,
        compressedBytes: 0,
        minTime: null,
        maxTime: null,
      });
      expect(Date.parse(empty.created)).not.toBeNaN();

      const token = await svc.apiToken();
      // 8 bodies of 500 events each, sent at once: their bytes add up whatever order they commit in.
      const bodies = Array.from({ length: 8 }, (_, b) =>
        Array.from(
          { length: 500 },
          (_, i) =>
            `{"_time":"2026-03-0${1 + (b % 5)}T10:${String(i % 60).padStart(2, '0')}:00Z","status":${200 + (i % 5)},"path":"/p/${b}/${i}"}`,
        ).join('\n'),
      );
      const results = await Promise.all(bodies.map((body) => svc.call('POST', '/v1/ingest/web', body, token, NDJSON)));
      expect(results.map((r) => r.status)).toEqual(bodies.map(() => 200));
      // A body refused whole adds nothing.
      expect(
        (await svc.call('POST', '/v1/ingest/web', '[{"a":', token, { 'content-type': 'application/json' })).status,
      ).toBe(400);
      const sent = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);

      const after = await info(svc, 'web');
      expect(after).toMatchObject({
        numEvents: 4000,
        numFields: 4,
        inputBytes: sent,
        minTime: '2026-03-01T10:00:00Z',
        maxTime: '2026-03-05T10:59:00Z',
      });
      expect(Object.fromEntries(after.fields.map((f) => [f.name, f.type]))).toEqual({
        _sysTime: 'datetime',
        _time: 'datetime',
        status: 'integer',
        path: 'string',
      });
      // Before a checkpoint the rows are in the WAL, counted at about the bytes they came as.
      expect(after.compressedBytes).toBeGreaterThan(sent / 4);
      expect(after.compressedBytes).toBeLessThanOrEqual(sent);
      expect(await info(svc, 'web', 'v2')).toEqual(after);

      await svc.close();
      svc = await startTestService({}, dataDir);
      const reopened = await info(svc, 'web');
      expect(reopened).toMatchObject({ numEvents: 4000, inputBytes: sent });
      // The close folded the rows into the file: compressed, they take less than a fifth of what was sent.
      expect(reopened.compressedBytes).toBeGreaterThan(0);
      expect(reopened.compressedBytes).toBeLessThan(sent / 5);
    } finally {
      await svc.close();
    }
  });

  it('answers 404 for a missing dataset and 403 without query:read on it; a deleted one forgets its bytes, also over restarts', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    let svc = await startTestService({}, dataDir);
    try {
      await svc.createDataset('secret');
      const missing = await svc.call('GET', '/v1/datasets/nope/info');
      expect(missing.status).toBe(404);
      expect(await missing.json()).toMatchObject({ code: 404 });
      const ingestOnly = await svc.apiToken({ secret: { ingest: ['create'] } });
      const refused = await svc.call('GET', '/v1/datasets/secret/info', undefined, ingestOnly);
      expect(refused.status).toBe(403);

      const token = await svc.apiToken();
      expect((await svc.call('POST', '/v1/ingest/secret', '{"a":1}', token, NDJSON)).status).toBe(200);
      // A body none of whose events is stored adds nothing.
      const none = await svc.call('POST', '/v1/ingest/secret', '"text"\n[1]', token, NDJSON);
      expect(await none.json()).toMatchObject({ ingested: 0, failed: 2 });
      expect((await info(svc, 'secret')).inputBytes).toBe(7);

      await svc.close();
      svc = await startTestService({}, dataDir);
      expect((await info(svc, 'secret')).inputBytes).toBe(7);
      // Asked while it is deleted: each answer is the dataset's info or 404, never a server error.
      const asked = Array.from({ length: 20 }, () => svc.call('GET', '/v1/datasets/secret/info'));
      expect((await svc.call('DELETE', '/v2/datasets/secret')).status).toBe(204);
      for (const r of await Promise.all(asked)) expect([200, 404], await r.text()).toContain(r.status);
      await svc.createDataset('secret');
      await svc.close();
      // The recorded count went with the dataset: the new one of the same name starts at 0.
      svc = await startTestService({}, dataDir);
      expect((await info(svc, 'secret')).inputBytes).toBe(0);
    } finally {
      await svc.close();
    }
  });

  it("counts a metrics dataset's points as its events, their span, its tables' size and the exports' bytes", async () => {
    const svc = await startTestService();
    try {
      expect((await svc.call('POST', '/v2/datasets', { name: 'm', kind: 'otel:metrics:v1' })).status).toBe(200);
      expect(await info(svc, 'm')).toMatchObject({ numEvents: 0, minTime: null, inputBytes: 0, compressedBytes: 0 });
      const token = await svc.apiToken({ m: { ingest: ['create'] } });
      const T0 = 1_767_225_600;
      const body = metricsBody(
        Array.from({ length: 10 }, (_, h) => ({
          metric: 'cpu',
          kind: 'gauge' as const,
          tags: { host: `h${h}` },
          points: Array.from({ length: 100 }, (_, i) => ({ t: T0 + 10 * i, v: i })),
        })),
      );
      const r = await svc.call('POST', '/v1/metrics', body, token, {
        'content-type': 'application/x-protobuf',
        'x-axiom-metrics-dataset': 'm',
      });
      expect(r.status).toBe(200);
      const got = await info(svc, 'm');
      expect(got).toMatchObject({
        numEvents: 1000,
        minTime: '2026-01-01T00:00:00Z',
        maxTime: '2026-01-01T00:16:30Z',
        inputBytes: body.length,
      });
      expect(got.compressedBytes).toBeGreaterThan(1000);

      // Exports and info requests interleaved: each answer counts whole exports, never fewer than the
      // exports answered before it was asked, and the last one all of them.
      const one = (k: number) =>
        metricsBody([{ metric: 'cpu', kind: 'gauge', tags: { host: `x${k}` }, points: [{ t: T0 + 2000 + k, v: k }] }]);
      let answered = 0;
      const seen: [number, number][] = [];
      await Promise.all([
        ...Array.from({ length: 20 }, async (_, k) => {
          const x = await svc.call('POST', '/v1/metrics', one(k), token, {
            'content-type': 'application/x-protobuf',
            'x-axiom-metrics-dataset': 'm',
          });
          expect(x.status).toBe(200);
          answered++;
        }),
        ...Array.from({ length: 10 }, async () => {
          const before = answered;
          seen.push([before, (await info(svc, 'm')).numEvents - 1000]);
        }),
      ]);
      for (const [before, counted] of seen) expect(counted).toBeGreaterThanOrEqual(before);
      expect(await info(svc, 'm')).toMatchObject({ numEvents: 1020, maxTime: '2026-01-01T00:33:39Z' });
    } finally {
      await svc.stop();
    }
  });
});
