/**
 * Metrics datasets: OTLP/HTTP protobuf metrics from the official OpenTelemetry SDK into a dataset of kind
 * otel:metrics:v1, stored as series and points, listed by the discovery endpoints; and what is refused, with
 * {code, message}: JSON bodies, metrics into an events dataset, events into a metrics dataset, unsupported
 * points (counted in partial_success).
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { MetricsStore } from '../../../../src/service/metrics/metrics-store.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../support/helpers.js';
import { exportMetrics } from '../../../support/otel.js';
import { metricsBody } from '../../../support/otlp-metrics.js';

let svc: TestService;
let ingest: string;
const RANGE = 'start=2000-01-01T00:00:00Z&end=2100-01-01T00:00:00Z';
const info = (path: string) => `/v1/query/metrics/info/datasets/${path}${path.includes('?') ? '&' : '?'}${RANGE}`;

beforeAll(async () => {
  svc = await startTestService();
  expect((await svc.call('POST', '/v2/datasets', { name: 'metrics', kind: 'otel:metrics:v1' })).status).toBe(200);
  await svc.createDataset('events');
  ingest = await svc.apiToken({ '*': { ingest: ['create'] } });
});
afterAll(async () => svc?.stop());

async function json(path: string, init?: { method?: string; body?: unknown; token?: string }) {
  const r = await svc.call(init?.method ?? 'GET', path, init?.body, init?.token);
  return { status: r.status, body: (await r.json()) as unknown };
}

/** Points of a metric as [tags, value], from the dataset's tables. */
async function points(metric: string): Promise<[Record<string, unknown>, number | null][]> {
  const table = svc.store.getDataset('metrics').table;
  const rows = await svc.store.db.all(
    `SELECT s.tags::VARCHAR AS tags, p.v FROM "${table}_points" p JOIN "${table}_series" s ON s.id = p.series
     WHERE s.metric = $1 ORDER BY s.tags::VARCHAR`,
    [metric],
  );
  return rows.map((r) => [JSON.parse(r.tags as string) as Record<string, unknown>, r.v as number | null]);
}

describe('metrics', () => {
  it('takes every metric type from the OpenTelemetry SDK and lists them with their type, temporality, unit and tags', async () => {
    const code = await exportMetrics(
      svc.url,
      { authorization: `Bearer ${ingest}`, 'x-axiom-metrics-dataset': 'metrics' },
      'shop',
    );
    expect(code).toBe(0);

    const listed = await json(info('metrics/metrics'));
    expect(listed).toEqual({
      status: 200,
      body: {
        requests: { type: 'CounterMonotonic', temporality: 'Cumulative', unit: '{request}' },
        'queue.depth': { type: 'CounterNonMonotonic', temporality: 'Cumulative', unit: null },
        latency: { type: 'Histogram', temporality: 'Cumulative', unit: 'ms' },
        'memory.used': { type: 'Gauge', temporality: null, unit: 'By' },
      },
    });
    const base = { 'service.name': 'shop', 'host.name': 'web-1' };
    expect(await points('requests')).toEqual([
      [{ ...base, 'http.route': '/a', 'http.status_code': 200 }, 12],
      [{ ...base, 'http.route': '/b', 'http.status_code': 500 }, 5],
    ]);
    expect(await points('queue.depth')).toEqual([[base, 4]]);
    expect(await points('memory.used')).toEqual([[{ ...base, pool: 'heap' }, 1_048_576]]);
    // A histogram point: its count, sum, min, max, and the count up to each bound.
    const h = Object.fromEntries(
      (await points('latency')).map(([tags, v]) => [
        `${String(tags['axiom.histogram'])}${tags.le ? ` le=${String(tags.le)}` : ''}`,
        v,
      ]),
    );
    expect(h).toEqual({
      count: 3,
      sum: 330,
      min: 10,
      max: 300,
      'bucket le=0': 0,
      'bucket le=50': 2,
      'bucket le=100': 2,
      'bucket le=+Inf': 3,
    });
    // The exponential histogram was refused, not stored.
    expect(await points('sizes')).toEqual([]);

    expect(await json(info('metrics/metrics/requests/tags'))).toEqual({
      status: 200,
      body: ['host.name', 'http.route', 'http.status_code', 'service.name'],
    });
    expect(await json(info('metrics/metrics/requests/tags/http.status_code/values'))).toEqual({
      status: 200,
      body: ['200', '500'],
    });
    expect((await json(info('metrics/tags'))).body).toEqual([
      'axiom.histogram',
      'host.name',
      'http.route',
      'http.status_code',
      'le',
      'pool',
      'service.name',
    ]);
    expect(await json(info('metrics/tags/pool/values'))).toEqual({ status: 200, body: ['heap'] });
    expect(await json(info('metrics/metrics'), { method: 'POST', body: { value: '/a' } })).toEqual({
      status: 200,
      body: ['latency', 'requests'],
    });
    // Only metrics with points in the range are listed.
    expect(
      await json('/v1/query/metrics/info/datasets/metrics/metrics?start=2001-01-01T00:00:00Z&end=2001-01-02T00:00:00Z'),
    ).toEqual({ status: 200, body: {} });
  });

  it('lists at most 10,000 entries, the first in order, saying so in x-ferry-truncated', async () => {
    expect((await svc.call('POST', '/v2/datasets', { name: 'many', kind: 'otel:metrics:v1' })).status).toBe(200);
    const n = 10_003;
    const body = metricsBody(
      Array.from({ length: n }, (_, i) => ({
        metric: `m${String(i % 10_002).padStart(5, '0')}`,
        kind: 'gauge' as const,
        tags: { host: `h${String(i).padStart(5, '0')}` },
        points: [{ t: 1_767_225_600, v: i }],
      })),
    );
    const r = await svc.call('POST', '/v1/metrics', body, ingest, {
      'content-type': 'application/x-protobuf',
      'x-axiom-metrics-dataset': 'many',
    });
    expect(r.status, await r.text()).toBe(200);
    const listed = async (path: string, init?: { method: string; body: unknown }) => {
      const res = await svc.call(init?.method ?? 'GET', info(path), init?.body);
      return {
        status: res.status,
        truncated: res.headers.get('x-ferry-truncated'),
        body: (await res.json()) as unknown,
      };
    };
    const values = await listed('many/tags/host/values');
    expect(values.status).toBe(200);
    expect(values.truncated).toBe('10000');
    expect(values.body).toEqual(Array.from({ length: 10_000 }, (_, i) => `h${String(i).padStart(5, '0')}`));
    const metrics = await listed('many/metrics');
    expect(metrics.truncated).toBe('10000');
    expect(Object.keys(metrics.body as object)).toHaveLength(10_000);
    expect((metrics.body as Record<string, unknown>).m00000).toEqual({ type: 'Gauge', temporality: null, unit: null });
    // Lists within the bound say nothing more.
    const tags = await listed('many/tags');
    expect(tags).toEqual({ status: 200, truncated: null, body: ['host'] });
    expect(await listed('many/metrics/m00000/tags/host/values')).toEqual({
      status: 200,
      truncated: null,
      body: ['h00000', 'h10002'],
    });
  });

  it('stores a tag whose bytes are not UTF-8 with U+FFFD in their place', async () => {
    // protobufjs encodes a lone surrogate as the bytes ED A0 80: not UTF-8, each byte read as U+FFFD.
    const body = metricsBody([
      { metric: 'odd', kind: 'gauge', tags: { t: 'a\ud800b' }, points: [{ t: 1_767_225_600, v: 1 }] },
    ]);
    const r = await svc.call('POST', '/v1/metrics', body, ingest, {
      'content-type': 'application/x-protobuf',
      'x-axiom-metrics-dataset': 'metrics',
    });
    expect(r.status, await r.text()).toBe(200);
    expect(await json(info('metrics/metrics/odd/tags/t/values'))).toEqual({
      status: 200,
      body: ['a\ufffd\ufffd\ufffdb'],
    });
  });

  it('refuses what it cannot take with {code, message}, and counts refused points in partial_success', async () => {
    const proto = createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js').opentelemetry.proto;
    const Request = proto.collector.metrics.v1.ExportMetricsServiceRequest;
    const Response = proto.collector.metrics.v1.ExportMetricsServiceResponse;
    const body = (metrics: object[]) =>
      Buffer.from(
        Request.encode(
          Request.fromObject({
            resourceMetrics: [
              {
                resource: { attributes: [{ key: 'service.name', value: { stringValue: 'raw' } }] },
                scopeMetrics: [{ metrics }],
              },
            ],
          }),
        ).finish(),
      );
    const gauge = (name: string, attributes: object[] = []) => ({
      name,
      gauge: { dataPoints: [{ timeUnixNano: '1767225600000000000', asDouble: 1.5, attributes }] },
    });
    const send = (bytes: Buffer | string, headers: Record<string, string> = {}) =>
      svc.call('POST', '/v1/metrics', bytes, ingest, {
        'content-type': 'application/x-protobuf',
        'x-axiom-metrics-dataset': 'metrics',
        ...headers,
      });

    // A point with an array attribute and an exponential histogram are refused; the good point is stored.
    const mixed = await send(
      body([
        gauge('ok.gauge'),
        gauge('bad.gauge', [{ key: 'list', value: { arrayValue: { values: [{ intValue: 1 }] } } }]),
        { name: 'exp', exponentialHistogram: { dataPoints: [{ count: 1 }, { count: 2 }] } },
      ]),
    );
    expect(mixed.status).toBe(200);
    expect(mixed.headers.get('content-type')).toMatch(/application\/x-protobuf/);
    const answer = Response.toObject(Response.decode(new Uint8Array(await mixed.arrayBuffer())), { longs: Number });
    expect(answer.partialSuccess.rejectedDataPoints).toBe(3);
    expect(answer.partialSuccess.errorMessage).toBe(
      'metric "bad.gauge": attribute "list" is of type array, which metrics tags cannot hold (string, int, double, bool)',
    );
    expect(await points('ok.gauge')).toEqual([[{ 'service.name': 'raw' }, 1.5]]);
    expect(await points('bad.gauge')).toEqual([]);

    const refusals: [Promise<Response>, number, RegExp][] = [
      [
        send('{"resourceMetrics":[]}', { 'content-type': 'application/json' }),
        415,
        /OTLP\/JSON is not taken for metrics/,
      ],
      [
        send(body([gauge('x')]), { 'x-axiom-metrics-dataset': 'events' }),
        400,
        /dataset "events" is of kind service:events:v1/,
      ],
      [send(body([gauge('x')]), { 'x-axiom-metrics-dataset': 'nope' }), 404, /dataset "nope" not found/],
      [send(Buffer.from([0x0a, 0xff, 0xff])), 400, /invalid OTLP metrics protobuf body/],
      [
        svc.call('POST', '/v1/ingest/metrics', '{"a":1}', ingest, { 'content-type': 'application/x-ndjson' }),
        400,
        /dataset "metrics" is a metrics dataset/,
      ],
      [
        svc.call('GET', '/v1/query/metrics/info/datasets/metrics/metrics?start=now-1h&end=now'),
        400,
        /start "now-1h" is not an RFC 3339 time/,
      ],
      [svc.call('GET', '/v1/query/metrics/info/datasets/metrics/metrics'), 400, /start is required/],
      [svc.call('GET', info('metrics/metrics/nope/tags')), 404, /metric "nope" in dataset "metrics" not found/],
      [svc.call('GET', info('metrics/metrics/requests/tags/nope/values')), 404, /tag "nope" of metric "requests"/],
      [
        svc.call('GET', info('events/metrics')),
        400,
        /dataset "events" is of kind service:events:v1, not otel:metrics:v1/,
      ],
      [
        svc.call('POST', '/v1/query/_apl?format=tabular', { apl: "['metrics'] | count" }),
        400,
        /dataset "metrics" is a metrics dataset \(kind otel:metrics:v1\): APL reads events/,
      ],
    ];
    for (const [call, status, message] of refusals) {
      const r = await call;
      const b = (await r.json()) as { code: number; message: string };
      expect(r.status, b.message).toBe(status);
      expect(b.code).toBe(status);
      expect(b.message).toMatch(message);
    }
    // A token without ingest on the dataset, and one without query on it.
    const queryOnly = await svc.apiToken({ metrics: { query: ['read'] } });
    expect(
      (
        await svc.call('POST', '/v1/metrics', body([gauge('x')]), queryOnly, {
          'content-type': 'application/x-protobuf',
          'x-axiom-metrics-dataset': 'metrics',
        })
      ).status,
    ).toBe(403);
    expect((await svc.call('GET', info('metrics/metrics'), undefined, ingest)).status).toBe(403);
  });

  it('makes each series once when exports of the same new series arrive at once, and keeps every point', async () => {
    expect((await svc.call('POST', '/v2/datasets', { name: 'burst', kind: 'otel:metrics:v1' })).status).toBe(200);
    const Request = createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js').opentelemetry.proto
      .collector.metrics.v1.ExportMetricsServiceRequest;
    // 8 exports, each of the same 50 series (5 metrics x 10 hosts), at a time of its own.
    const exportAt = (second: number) =>
      Buffer.from(
        Request.encode(
          Request.fromObject({
            resourceMetrics: Array.from({ length: 10 }, (_, h) => ({
              resource: { attributes: [{ key: 'host', value: { stringValue: `h${h}` } }] },
              scopeMetrics: [
                {
                  metrics: Array.from({ length: 5 }, (_, m) => ({
                    name: `m${m}`,
                    gauge: {
                      dataPoints: [{ timeUnixNano: `${1767225600 + second}000000000`, asInt: second * 100 + h }],
                    },
                  })),
                },
              ],
            })),
          }),
        ).finish(),
      );
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        svc.call('POST', '/v1/metrics', exportAt(i), ingest, {
          'content-type': 'application/x-protobuf',
          'x-axiom-metrics-dataset': 'burst',
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    const table = svc.store.getDataset('burst').table;
    const [counts] = await svc.store.db.all(
      `SELECT (SELECT count(*) FROM "${table}_series") AS series, (SELECT count(DISTINCT key) FROM "${table}_series") AS keys,
         (SELECT count(*) FROM "${table}_points") AS points, (SELECT sum(v) FROM "${table}_points") AS total`,
    );
    // Each of the 8 seconds gives each host its own value on each of the 5 metrics.
    const total =
      5 *
      Array.from({ length: 8 }, (_, s) => Array.from({ length: 10 }, (_, h) => s * 100 + h))
        .flat()
        .reduce((a, b) => a + b, 0);
    expect(counts).toMatchObject({ series: 50n, keys: 50n, points: 400n, total });
    // Deleting the dataset drops its series and points with it.
    expect((await svc.call('DELETE', '/v2/datasets/burst')).status).toBe(204);
    const left = await svc.store.db.all(`SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '${table}%'`);
    expect(left).toEqual([]);
  });

  it('keeps apart series whose attribute text looks like another set, refuses malformed histograms, and takes a 1 MiB export of histograms', async () => {
    expect((await svc.call('POST', '/v2/datasets', { name: 'shapes', kind: 'otel:metrics:v1' })).status).toBe(200);
    const proto = createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js').opentelemetry.proto;
    const Request = proto.collector.metrics.v1.ExportMetricsServiceRequest;
    const Response = proto.collector.metrics.v1.ExportMetricsServiceResponse;
    const send = async (metrics: object[]) => {
      const r = await svc.call(
        'POST',
        '/v1/metrics',
        Buffer.from(
          Request.encode(Request.fromObject({ resourceMetrics: [{ scopeMetrics: [{ metrics }] }] })).finish(),
        ),
        ingest,
        { 'content-type': 'application/x-protobuf', 'x-axiom-metrics-dataset': 'shapes' },
      );
      const bytes = new Uint8Array(await r.arrayBuffer());
      return {
        status: r.status,
        answer:
          r.status === 200
            ? Response.toObject(Response.decode(bytes), { longs: Number })
            : new TextDecoder().decode(bytes),
      };
    };
    const s = (key: string, v: string) => ({ key, value: { stringValue: v } });
    const at = '1767225600000000000';
    const forged = await send([
      {
        name: 'forged',
        gauge: {
          dataPoints: [
            { timeUnixNano: at, asInt: 1, attributes: [s('a', 'x\u0002b\u0001sy')] },
            { timeUnixNano: at, asInt: 2, attributes: [s('a', 'x'), s('b', 'y')] },
            { timeUnixNano: at, asInt: 3, attributes: [s('a', 'x:b'), s('b', '')] },
            { timeUnixNano: at, asInt: 4, attributes: [s('a', 'x'), s('b', ':b')] },
          ],
        },
      },
      {
        name: 'bad.hist',
        histogram: {
          aggregationTemporality: 2,
          dataPoints: [
            { timeUnixNano: at, count: 3, bucketCounts: [1, 1, 1], explicitBounds: [1] },
            { timeUnixNano: at, count: 3, bucketCounts: [1, 1, 1], explicitBounds: [5, 1] },
            { timeUnixNano: at, count: 2, bucketCounts: [1, 1], explicitBounds: [1] },
          ],
        },
      },
    ]);
    expect(forged.status).toBe(200);
    expect(forged.answer).toEqual({
      partialSuccess: {
        rejectedDataPoints: 2,
        errorMessage:
          'metric "bad.hist": a histogram point with 3 bucket counts for 1 bounds (OTLP asks for one count more than bounds)',
      },
    });
    const table = svc.store.getDataset('shapes').table;
    const series = await svc.store.db.all(
      `SELECT s.metric, s.tags::VARCHAR AS tags, p.v FROM "${table}_points" p JOIN "${table}_series" s ON s.id = p.series ORDER BY p.v`,
    );
    const seen = series.map((r) => JSON.stringify([r.metric, JSON.parse(r.tags as string), r.v])).sort();
    expect(seen).toEqual(
      [
        ['forged', { a: 'x\u0002b\u0001sy' }, 1],
        ['forged', { a: 'x', b: 'y' }, 2],
        ['forged', { a: 'x:b', b: '' }, 3],
        ['forged', { a: 'x', b: ':b' }, 4],
        // The one well-formed histogram point: its count and two buckets; the others left nothing.
        ['bad.hist', { 'axiom.histogram': 'bucket', le: '1' }, 1],
        ['bad.hist', { 'axiom.histogram': 'bucket', le: '+Inf' }, 2],
        ['bad.hist', { 'axiom.histogram': 'count' }, 2],
      ]
        .map((x) => JSON.stringify(x))
        .sort(),
    );

    // 5,000 histogram points of series of their own, 10 bounds each: a collector's batch, about 1 MiB.
    const big = await send([
      {
        name: 'http.duration',
        unit: 'ms',
        histogram: {
          aggregationTemporality: 2,
          dataPoints: Array.from({ length: 5000 }, (_, i) => ({
            timeUnixNano: at,
            count: 55,
            sum: 1234.5,
            bucketCounts: Array.from({ length: 11 }, (_, b) => b % 10),
            explicitBounds: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
            attributes: [
              s('http.route', `/api/v1/items/${i}`),
              s('service.name', 'checkout'),
              s('k8s.pod.name', `checkout-7d9f-${i % 50}`),
            ],
          })),
        },
      },
    ]);
    expect(big.status, JSON.stringify(big.answer)).toBe(200);
    expect(await MetricsStore.of(svc.store).pointCount('shapes')).toBe(7 + 5000 * 13);
  });

  it('trims metrics by retention, refuses events for a metrics dataset in the store itself, and answers ingest and reads racing a deletion with 200 or 404', async () => {
    expect((await svc.call('POST', '/v2/datasets', { name: 'aging', kind: 'otel:metrics:v1' })).status).toBe(200);
    const Request = createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js').opentelemetry.proto
      .collector.metrics.v1.ExportMetricsServiceRequest;
    const now = Math.floor(Date.now() / 1000);
    const exportAt = (seconds: number[]) =>
      Buffer.from(
        Request.encode(
          Request.fromObject({
            resourceMetrics: [
              {
                scopeMetrics: [
                  {
                    metrics: [
                      {
                        name: 'age',
                        gauge: { dataPoints: seconds.map((t) => ({ timeUnixNano: `${t}000000000`, asInt: t })) },
                      },
                    ],
                  },
                ],
              },
            ],
          }),
        ).finish(),
      );
    const headers = (dataset: string) => ({
      'content-type': 'application/x-protobuf',
      'x-axiom-metrics-dataset': dataset,
    });
    const day = 86_400;
    expect(
      (
        await svc.call(
          'POST',
          '/v1/metrics',
          exportAt([now - 3 * day, now - 2 * day, now - 60]),
          ingest,
          headers('aging'),
        )
      ).status,
    ).toBe(200);
    expect((await svc.call('POST', '/v2/datasets/aging/trim', { maxDuration: '36h' })).status).toBe(204);
    const table = svc.store.getDataset('aging').table;
    expect((await svc.store.db.all(`SELECT v FROM "${table}_points" ORDER BY v`)).map((r) => r.v)).toEqual([now - 60]);

    const file = svc.store.tempFile('ndjson');
    writeFileSync(file, '{"a":1}\n');
    await expect(svc.store.ingestFile('aging', file, 'ndjson')).rejects.toThrow(/is a metrics dataset/);

    // Exports and discovery reads of a fresh dataset at once, and the dataset deleted among them.
    expect((await svc.call('POST', '/v2/datasets', { name: 'brief', kind: 'otel:metrics:v1' })).status).toBe(200);
    const range = 'start=2000-01-01T00:00:00Z&end=2100-01-01T00:00:00Z';
    const calls = Array.from({ length: 24 }, (_, i) =>
      i % 2 === 0
        ? svc.call('POST', '/v1/metrics', exportAt([now - i]), ingest, headers('brief'))
        : svc.call('GET', `/v1/query/metrics/info/datasets/brief/tags?${range}`),
    );
    await new Promise((r) => setTimeout(r, 5));
    const deleted = svc.call('DELETE', '/v2/datasets/brief');
    const answers = await Promise.all([...calls, deleted]);
    for (const r of answers) expect([200, 204, 404], `${r.status} ${await r.text()}`).toContain(r.status);
    const left = await svc.store.db.all(
      `SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '${svc.store.listDatasets().length >= 0 ? 'ev' : ''}%' AND table_name NOT IN (SELECT unnest([${svc.store
        .listDatasets()
        .map((d) => `'${d.table}', '${d.table}_series', '${d.table}_points'`)
        .join(', ')}]))`,
    );
    // No table is left of the deleted dataset (the events tables and the metrics tables of the others are known).
    expect(left).toEqual([]);
  });
});
