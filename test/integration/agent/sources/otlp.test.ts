/**
 * The `otlp` source with the real binary and the official OpenTelemetry JS SDK exporters (protobuf and
 * JSON): spans and log records go to the agent, which answers once they are on its disk; they reach a
 * local store (datasets made with the signal's kind, queried with APL) and a receiver that was down, across
 * a kill -9 of the agent. Requests the source refuses get their status.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { ADMIN, freePort, tempDir } from '../../../support/helpers.js';
import { emptyFields, emptySpans, exportLogs, exportTrace, protoField } from '../../../support/otel.js';

afterEach(stopAgentsAndReceivers);

/** An agent with one otlp source (`keys`, its settings besides the address) shipping to nobody, and its API. */
async function otlpAgent(keys: string, env: Record<string, string> = {}) {
  const port = await freePort();
  const dir = tempDir();
  const config = join(dir, 'agent.yaml');
  writeFileSync(
    config,
    `service: { enabled: false }
agent: { data_dir: ${join(dir, 'agent')}, api: { listen: 127.0.0.1:0 } }
sources:
  otel: { type: otlp, address: "127.0.0.1:${port}", ${keys} }
sinks:
  out: { type: axiom, inputs: [otel], url: "http://127.0.0.1:9", token: t, dataset: fallback }
`,
  );
  const agent = startAgent(config, env);
  const api = (await agent.waitLog('agent running')).api as string;
  return { agent, port, api };
}

describe('OTLP from OpenTelemetry SDKs through the agent', () => {
  it('reaches the local store and a receiver that was down, across a kill -9, queried with APL', async () => {
    const receiver = await startReceiver();
    await receiver.down();
    const port = await freePort();
    const dir = tempDir();
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `service: { listen: 127.0.0.1:0, data_dir: ${join(dir, 'data')}, memory_limit: 1GB }
agent: { data_dir: ${join(dir, 'agent')}, api: { listen: 127.0.0.1:0 } }
sources:
  otel: { type: otlp, address: "127.0.0.1:${port}", logs_dataset: app-logs }
sinks:
  local: { type: local, inputs: [otel], dataset: fallback }
  out:
    type: axiom
    inputs: [otel]
    url: ${receiver.url}
    token: t
    dataset: fallback
    retry: { initial_backoff: 100ms, max_backoff: 500ms }
`,
    );
    const agent = startAgent(config);
    await agent.waitLog('agent running');
    const url = `http://127.0.0.1:${port}`;
    const traces = { 'x-axiom-dataset': 'app-traces' };
    const a = await exportTrace(url, traces, 'cart', 'proto');
    const b = await exportTrace(url, traces, 'checkout', 'json');
    await exportLogs(url, {}, 'cart', 'proto', { traceId: a.traceId, spanId: a.parentId }); // logs_dataset
    await exportLogs(url, {}, 'checkout', 'json');

    agent.child.kill('SIGKILL');
    await agent.exited;
    const again = startAgent(config);
    const svc = (await again.waitLog('event service listening')).url as string;
    await again.waitLog('agent running');
    await receiver.up();

    const deadline = Date.now() + 30_000;
    while (receiver.events.length < 8 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const byDataset = (ds: string) => receiver.batches.filter((x) => x.dataset === ds).flatMap((x) => x.events);
    expect(
      byDataset('app-traces')
        .map((e) => e.trace_id)
        .sort(),
    ).toEqual([a.traceId, a.traceId, b.traceId, b.traceId].sort());
    expect(byDataset('app-logs').map((e) => e.body)).toContain('cart of cart is slow');
    expect(byDataset('fallback')).toEqual([]);

    const query = async (apl: string) => {
      const r = await fetch(`${svc}/v1/datasets/_apl?format=tabular`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ apl, startTime: '2000-01-01T00:00:00Z' }),
      });
      const body = (await r.json()) as { tables: { fields: { name: string }[]; columns: unknown[][] }[] };
      expect(r.status, JSON.stringify(body)).toBe(200);
      const t = body.tables[0]!;
      return Array.from({ length: t.columns[0]?.length ?? 0 }, (_, i) =>
        Object.fromEntries(t.fields.map((f, c) => [f.name, t.columns[c]![i]])),
      );
    };
    // The local sink delivers on its own schedule: wait for both datasets' events. A kill -9 may repeat what
    // the local sink had stored but not yet acknowledged (at least once): spans are told apart by span_id.
    let datasets: { name: string; kind: string }[] = [];
    while (Date.now() < deadline) {
      datasets = (await (
        await fetch(`${svc}/v2/datasets`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).json()) as { name: string; kind: string }[];
      if (datasets.some((d) => d.name === 'app-logs') && Number((await query(`['app-logs'] | count`))[0]?.count) >= 4)
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(datasets.filter((d) => d.name.startsWith('app-')).map((d) => [d.name, d.kind])).toEqual(
      expect.arrayContaining([
        ['app-traces', 'otel:traces:v1'],
        ['app-logs', 'otel:logs:v1'],
      ]),
    );
    const spans = await query(
      `['app-traces'] | where trace_id == '${a.traceId}' | summarize by span_id, name, parent_span_id, kind, ['service.name'] | project-away span_id | sort by name asc`,
    );
    expect(spans).toEqual([
      { name: 'GET /cart', parent_span_id: '', kind: 'server', 'service.name': 'cart' },
      { name: 'SELECT cart', parent_span_id: a.parentId, kind: 'client', 'service.name': 'cart' },
    ]);
    const slow = await query(
      `['app-traces'] | where duration > 1ms | summarize n = dcount(span_id) by ['service.name'] | sort by ['service.name'] asc`,
    );
    expect(slow).toEqual([
      { 'service.name': 'cart', n: 2 },
      { 'service.name': 'checkout', n: 2 },
    ]);
    const logs = await query(`['app-logs'] | where trace_id == '${a.traceId}' | distinct body`);
    expect(logs).toEqual([{ body: 'cart of cart is slow' }]);
  }, 90_000);

  it('refuses what it cannot take: no dataset, a bad body, a wrong path, a token when tokens are set', async () => {
    const { port, api } = await otlpAgent('tokens: ["otel-secret"]');
    const post = async (path: string, body: string | Buffer, headers: Record<string, string>) => {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers, body: body as BodyInit });
      return { status: r.status, body: (await r.json()) as { code: number; message: string } };
    };
    const auth = { authorization: 'Bearer otel-secret', 'content-type': 'application/json' };
    expect((await post('/v1/traces', '{}', { 'content-type': 'application/json' })).status).toBe(401);
    expect((await post('/v1/traces', '{}', auth)).body.message).toMatch(/X-Axiom-Dataset/);
    const bad = await post('/v1/traces', '{"resourceSpans": 1}', { ...auth, 'x-axiom-dataset': 'spans' });
    expect(bad).toMatchObject({
      status: 400,
      body: { code: 400, message: expect.stringMatching(/invalid OTLP traces JSON/) },
    });
    expect((await post('/v1/profiles', '{}', { ...auth, 'x-axiom-dataset': 'spans' })).status).toBe(404);
    // Metrics name their dataset in a header of their own, and come as protobuf (as Axiom takes them).
    expect((await post('/v1/metrics', '{}', { ...auth, 'x-axiom-dataset': 'spans' })).body.message).toMatch(
      /X-Axiom-Metrics-Dataset/,
    );
    expect((await post('/v1/metrics', '{}', { ...auth, 'x-axiom-metrics-dataset': 'm' })).status).toBe(415);
    const garbage = await post('/v1/metrics', Buffer.from([0xff, 0xff, 0xff]), {
      authorization: 'Bearer otel-secret',
      'content-type': 'application/x-protobuf',
      'x-axiom-metrics-dataset': 'm',
    });
    expect(garbage.status).toBe(400);
    expect((await post('/v1/traces', '{}', { ...auth, 'x-axiom-dataset': '-bad-' })).status).toBe(400);
    expect(
      (
        await post('/v1/traces', '{}', {
          authorization: 'Bearer otel-secret',
          'content-type': 'text/plain',
          'x-axiom-dataset': 'spans',
        })
      ).status,
    ).toBe(415);
    const empty = await fetch(`http://127.0.0.1:${port}/v1/traces`, {
      method: 'POST',
      headers: { ...auth, 'x-axiom-dataset': 'spans' },
      body: '{}',
    });
    expect([empty.status, await empty.text()]).toEqual([200, '{}']);

    // A client that goes away while its body is decoded (110,000 empty spans: about half a second) gets
    // nothing handed on: it will send again.
    const counter = async (name: string) => {
      const text = await (await fetch(`${api}/metrics`)).text();
      return text
        .split('\n')
        .filter((l) => l.startsWith(name))
        .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    };
    const client = new AbortController();
    const gone = fetch(`http://127.0.0.1:${port}/v1/traces`, {
      method: 'POST',
      headers: {
        ...auth,
        'content-type': 'application/x-protobuf',
        'content-encoding': 'gzip',
        'x-axiom-dataset': 'spans',
      },
      body: gzipSync(emptySpans(110_000)) as unknown as BodyInit,
      signal: client.signal,
    }).catch((e: Error) => e.name);
    setTimeout(() => client.abort(), 100);
    expect(await gone).toBe('AbortError');
    const deadline = Date.now() + 15_000;
    while ((await counter('ferry_source_otlp_requests_total{source="otel",code="499"}')) === 0) {
      expect(Date.now(), 'the request of a client that went away is counted as 499').toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await counter('ferry_source_otlp_spans_total')).toBe(0);
  }, 60_000);

  it('refuses bodies that decode into far more than they weigh, within a small heap, and goes on taking exports', async () => {
    // Decoded whole, each of these bodies takes hundreds of megabytes: more than this heap holds. They are
    // decoded in a worker thread with a heap of its own, one item at a time.
    const { agent, port } = await otlpAgent('max_decompressed_bytes: 4MiB, max_inflight_bytes: 64MiB', {
      NODE_OPTIONS: '--max-old-space-size=160',
    });
    const url = `http://127.0.0.1:${port}`;
    const post = async (body: Buffer, type: string) => {
      const r = await fetch(`${url}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': type, 'content-encoding': 'gzip', 'x-axiom-dataset': 'spans' },
        body: gzipSync(body) as unknown as BodyInit,
      });
      return { status: r.status, body: (await r.json()) as { message: string } };
    };
    // Two million empty spans (4 MB, 4 KB gzipped): their events pass what one request may make.
    const spans = emptySpans(2_000_000);
    expect(await post(spans, 'application/x-protobuf')).toMatchObject({
      status: 413,
      body: { message: expect.stringMatching(/events of this body would take more than/) },
    });
    // One span of a million empty span events (2 MB, 2 KB gzipped): its decoder runs out of its own heap.
    const events = protoField(1, protoField(2, protoField(2, emptyFields(11, 1_000_000))));
    expect(await post(events, 'application/x-protobuf')).toMatchObject({
      status: 413,
      body: { message: expect.stringMatching(/more than the 256 MiB its decoder may hold/) },
    });
    // The same in JSON: 1.3 million empty spans.
    const json = Buffer.from(
      `{"resourceSpans":[{"scopeSpans":[{"spans":[${Array(1_300_000).fill('{}').join(',')}]}]}]}`,
    );
    expect((await post(json, 'application/json')).status).toBe(413);
    // Still running, and taking what real exporters send.
    await exportTrace(url, { 'x-axiom-dataset': 'spans' }, 'cart', 'proto');
    expect(agent.child.exitCode).toBeNull();
  }, 60_000);
});
