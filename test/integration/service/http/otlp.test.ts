/**
 * OTLP/HTTP into the embedded service, sent by the official OpenTelemetry JS SDK exporters (protobuf and
 * JSON) with the dataset in X-Axiom-Dataset, then read back with APL: a trace's spans by trace_id, their
 * durations (timespans in a traces dataset) by service, log records with their trace ids. Bad bodies, a
 * missing or wrong dataset and wrong tokens get their status.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../support/helpers.js';
import { exportLogs, exportTrace } from '../../../support/otel.js';

let svc: TestService;
let token: string;

beforeAll(async () => {
  svc = await startTestService();
  for (const [name, kind] of [
    ['traces', 'otel:traces:v1'],
    ['logs', 'otel:logs:v1'],
    ['events', 'axiom:events:v1'],
  ]) {
    const r = await svc.call('POST', '/v2/datasets', { name, kind });
    expect(r.status).toBe(200);
  }
  token = await svc.apiToken();
});
afterAll(async () => svc.stop());

async function rows(apl: string): Promise<Record<string, unknown>[]> {
  const r = await svc.call(
    'POST',
    '/v1/datasets/_apl?format=tabular',
    { apl, startTime: '2000-01-01T00:00:00Z' },
    token,
  );
  const body = (await r.json()) as { tables: { fields: { name: string; type: string }[]; columns: unknown[][] }[] };
  expect(r.status, JSON.stringify(body)).toBe(200);
  const t = body.tables[0]!;
  const n = t.columns[0]?.length ?? 0;
  return Array.from({ length: n }, (_, i) => Object.fromEntries(t.fields.map((f, c) => [f.name, t.columns[c]![i]])));
}

const headers = (dataset: string) => ({ authorization: `Bearer ${token}`, 'x-axiom-dataset': dataset });

describe('OTLP/HTTP into the service', () => {
  it('stores spans from the protobuf and JSON exporters with Axiom’s field names, queried by trace and service', async () => {
    const a = await exportTrace(svc.url, headers('traces'), 'cart', 'proto');
    const b = await exportTrace(svc.url, headers('traces'), 'checkout', 'json');
    const spans = await rows(
      `['traces'] | where trace_id == '${a.traceId}' | project name, kind, span_id, parent_span_id, status_code, error, ['service.name'], ['scope.name'], ['attributes.http.method'], ['resource.deployment.environment'], events | sort by name asc`,
    );
    expect(spans).toHaveLength(2);
    expect(spans[0]).toMatchObject({
      name: 'GET /cart',
      kind: 'server',
      span_id: a.parentId,
      parent_span_id: '',
      status_code: 'UNSET',
      error: false,
      'service.name': 'cart',
      'scope.name': 'shop-instrumentation',
      'attributes.http.method': 'GET',
      'resource.deployment.environment': 'test',
    });
    expect(JSON.stringify(spans[0]!.events)).toContain('cache miss');
    expect(spans[1]).toMatchObject({
      name: 'SELECT cart',
      kind: 'client',
      span_id: a.childId,
      parent_span_id: a.parentId,
      status_code: 'ERROR',
      error: true,
    });
    const fromJson = await rows(`['traces'] | where trace_id == '${b.traceId}' | count`);
    expect(fromJson[0]).toEqual({ count: 2 });
    // duration is a timespan in a traces dataset: compared with timespans, averaged by service.
    const byService = await rows(
      `['traces'] | where duration > 1ms | summarize spans = count(), avg_duration = avg(duration) by ['service.name'] | sort by ['service.name'] asc`,
    );
    expect(byService.map((r) => [r['service.name'], r.spans])).toEqual([
      ['cart', 2],
      ['checkout', 2],
    ]);
    expect(String(byService[0]!.avg_duration)).toMatch(/^\d+(\.\d+)?(ms|s)$/);
    const schema = await rows(`['traces'] | getschema | where ColumnName == 'duration' | project ColumnType`);
    expect(schema).toEqual([{ ColumnType: 'timespan' }]);
  });

  it('stores log records from the protobuf and JSON exporters, with the trace they were written in', async () => {
    const ids = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
    await exportLogs(svc.url, headers('logs'), 'cart', 'proto', ids);
    await exportLogs(svc.url, headers('logs'), 'checkout', 'json');
    const warn = await rows(
      `['logs'] | where severity_text == 'WARN' | project body, severity_number, trace_id, span_id, ['service.name'], ['attributes.user.id'], ['scope.name'] | sort by ['service.name'] asc`,
    );
    expect(warn).toEqual([
      {
        body: 'cart of cart is slow',
        severity_number: 13,
        trace_id: ids.traceId,
        span_id: ids.spanId,
        'service.name': 'cart',
        'attributes.user.id': 42,
        'scope.name': 'shop-logger',
      },
      {
        body: 'cart of checkout is slow',
        severity_number: 13,
        trace_id: null,
        span_id: null,
        'service.name': 'checkout',
        'attributes.user.id': 42,
        'scope.name': 'shop-logger',
      },
    ]);
    const info = await rows(`['logs'] | where severity_text == 'INFO' | project ['body.order'] | take 1`);
    expect(info).toEqual([{ 'body.order': 7 }]);
  });

  it('takes gzip bodies, and spans into an events dataset', async () => {
    const { traceId } = await exportTrace(svc.url, headers('events'), 'cart', 'proto');
    expect(await rows(`['events'] | where trace_id == '${traceId}' | count`)).toEqual([{ count: 2 }]);
    const body = JSON.stringify({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '5B8EFFF798038103D269B633813FC60C',
                  spanId: 'EEE19B7EC3C1B174',
                  name: 'gz',
                  kind: 'SPAN_KIND_SERVER',
                  startTimeUnixNano: '1700000000000000000',
                  endTimeUnixNano: '1700000000250000000',
                },
              ],
            },
          ],
        },
      ],
    });
    const r = await svc.call('POST', '/v1/traces', gzipSync(body), token, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'x-axiom-dataset': 'traces',
    });
    expect([r.status, await r.text()]).toEqual([200, '{}']);
    expect(await rows(`['traces'] | where name == 'gz' | project trace_id, kind, duration, _time`)).toEqual([
      {
        trace_id: '5b8efff798038103d269b633813fc60c',
        kind: 'server',
        duration: '250ms',
        _time: '2023-11-14T22:13:20Z',
      },
    ]);
  });

  it('answers bad bodies, datasets and tokens with {code, message}', async () => {
    const send = async (body: string | Buffer, h: Record<string, string>, t = token) => {
      const r = await svc.call('POST', '/v1/traces', body, t, h);
      return { status: r.status, body: (await r.json()) as { code: number; message: string } };
    };
    const proto = { 'content-type': 'application/x-protobuf', 'x-axiom-dataset': 'traces' };
    const bad = await send(Buffer.from([0x0a, 0xff, 0xff, 0xff]), proto);
    expect(bad).toMatchObject({
      status: 400,
      body: { code: 400, message: expect.stringMatching(/invalid OTLP traces protobuf body/) },
    });
    const json = { 'content-type': 'application/json', 'x-axiom-dataset': 'traces' };
    expect((await send('{"resourceSpans": 3}', json)).status).toBe(400);
    expect((await send('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}', json)).status).toBe(400);
    expect((await send('{}', { 'content-type': 'text/plain', 'x-axiom-dataset': 'traces' })).status).toBe(415);
    expect((await send('{}', { 'content-type': 'application/json' })).body.message).toMatch(/x-axiom-dataset/);
    expect((await send('{}', { ...json, 'x-axiom-dataset': 'nope' })).status).toBe(404);
    expect((await send('{}', { ...json, 'x-axiom-dataset': 'logs' })).body.message).toMatch(/of kind otel:logs:v1/);
    expect((await send('{}', json, 'xaat-not-a-token')).status).toBe(401);
    const pat = (await svc.userWithPat('admin')).pat;
    expect((await send('{}', json, pat)).status).toBe(403);
    const readOnly = await svc.apiToken({ traces: { query: ['read'] } });
    expect((await send('{}', json, readOnly)).status).toBe(403);
    expect((await send('{}', json)).status).toBe(200);
  });

  it('refuses bodies that would blow up: ids that are not hex strings or not OTLP’s length, times past 2262, spans that repeat a large resource', async () => {
    const json = { 'content-type': 'application/json', 'x-axiom-dataset': 'traces' };
    const spans = (span: object) => JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] });
    const send = async (body: string | Buffer, h: Record<string, string> = json) => {
      const r = await svc.call('POST', '/v1/traces', body, token, h);
      return { status: r.status, body: (await r.json()) as { code: number; message: string } };
    };
    // protobufjs takes any object with a length as bytes: {"length": 3e8} would make a 600 MB id.
    expect(await send(spans({ traceId: { length: 3e8 } }))).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/traceId must be a hex string/) },
    });
    expect((await send(spans({ traceId: 'abcdef', spanId: 'eee19b7ec3c1b174' }))).body.message).toMatch(
      /trace id of 3 bytes/,
    );
    expect((await send(spans({ startTimeUnixNano: '18446744073709551615' }))).body.message).toMatch(/past 2262/);
    // A 100 KB resource attribute repeated by 20,000 empty spans: a 2 GB expansion from a body of a few KB.
    const bomb = gzipSync(
      JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'pad', value: { stringValue: 'x'.repeat(100_000) } }] },
            scopeSpans: [{ spans: Array(20_000).fill({}) }],
          },
        ],
      }),
    );
    expect(bomb.length).toBeLessThan(10_000);
    const refused = await send(bomb, { ...json, 'content-encoding': 'gzip' });
    expect(refused).toMatchObject({ status: 413, body: { message: expect.stringMatching(/send smaller exports/) } });
    // A client that writes a float duration into the traces dataset does not break its duration queries.
    const floats = await svc.call('POST', '/v1/ingest/traces', '{"name":"float","duration":1500000.5}', token, {
      'content-type': 'application/x-ndjson',
    });
    expect(floats.status).toBe(200);
    expect(await rows(`['traces'] | where name == 'float' and duration > 1ms | project duration`)).toEqual([
      { duration: '1.5ms' },
    ]);
    expect(await rows(`['traces'] | getschema | where ColumnName == 'duration' | project ColumnType`)).toEqual([
      { ColumnType: 'timespan' },
    ]);
    // A span without a start time takes the time it was received, not 1970.
    expect((await send(spans({ name: 'no-start', endTimeUnixNano: '5' }))).status).toBe(200);
    const [row] = await rows(`['traces'] | where name == 'no-start' | project _time`);
    expect(Date.parse(String(row!._time))).toBeGreaterThan(Date.now() - 60_000);
  });
});
