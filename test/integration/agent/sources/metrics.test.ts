/**
 * Metrics through the real agent: the host_metrics source (reading a /proc made by the test, so values are
 * known) and OTLP metrics from the official OpenTelemetry SDK's proto exporter into the otlp source reach
 * the agent's local store and another Ferry (over OTLP, by the axiom sink) as metrics datasets; the same
 * export sent straight to that Ferry gives the same answers to the same MPL queries.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { ADMIN, freePort, startTestService, tempDir, type TestService } from '../../../support/helpers.js';
import { exportMetrics } from '../../../support/otel.js';

afterEach(stopAgentsAndReceivers);

let remote: TestService;
beforeAll(async () => {
  remote = await startTestService();
  for (const name of ['host-metrics', 'app-metrics', 'direct'])
    expect((await remote.call('POST', '/v2/datasets', { name, kind: 'otel:metrics:v1' })).status).toBe(200);
});
afterAll(async () => remote?.stop());

/** A /proc with known figures: 1,000 KiB of memory of which 460 used, two CPUs, one disk, one interface. */
function fakeProc(): string {
  const dir = tempDir();
  // As the host's /proc mounted into a container: mounts and net/dev are read as its pid 1 sees them.
  mkdirSync(join(dir, '1', 'net'), { recursive: true });
  writeFileSync(
    join(dir, 'stat'),
    'cpu  300 0 100 600 0 0 0 0\ncpu0 150 0 50 300 0 0 0 0\ncpu1 150 0 50 300 0 0 0 0\n',
  );
  writeFileSync(
    join(dir, 'meminfo'),
    'MemTotal: 1000 kB\nMemFree: 300 kB\nBuffers: 50 kB\nCached: 150 kB\nSReclaimable: 40 kB\nSUnreclaim: 10 kB\n',
  );
  writeFileSync(join(dir, 'loadavg'), '0.50 0.25 0.125 1/100 42\n');
  writeFileSync(join(dir, 'diskstats'), '   8       0 sda 100 5 2000 50 200 10 4000 80 0 1500 130 0 0 0 0\n');
  writeFileSync(
    join(dir, '1', 'net', 'dev'),
    'Inter-| Receive | Transmit\n face |bytes packets\n  eth0: 5000 50 1 2 0 0 0 0 7000 70 3 4 0 0 0 0\n',
  );
  writeFileSync(
    join(dir, '1', 'mounts'),
    '/dev/root / ext4 rw 0 0\nproc /proc proc rw 0 0\nsrv:/x /mnt/x nfs4 rw 0 0\n',
  );
  return dir;
}

async function mpl(base: string, token: string, text: string) {
  const r = await fetch(`${base}/v1/query/_mpl`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ mpl: text, startTime: 'now-1h', endTime: 'now+1h' }),
  });
  const body = (await r.json()) as { series?: { tags: Record<string, unknown>; data: (number | null)[] }[] };
  expect(r.status, JSON.stringify(body)).toBe(200);
  return (body.series ?? []).map((s) => [s.tags, s.data.filter((v) => v !== null)]);
}

describe('metrics through the agent', () => {
  it('host_metrics and OTLP metrics reach the local store and another Ferry, and answer MPL as a direct export does', async () => {
    const proc = fakeProc();
    const port = await freePort();
    const dir = tempDir();
    const ingest = await remote.apiToken({ '*': { ingest: ['create'] } });
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `service: { listen: 127.0.0.1:0, data_dir: ${join(dir, 'data')}, memory_limit: 256MB }
agent: { data_dir: ${join(dir, 'agent')}, api: { listen: 127.0.0.1:0 } }
sources:
  host: { type: host_metrics, interval: 1s, proc_path: ${proc}, host_name: test-host }
  otel: { type: otlp, address: "127.0.0.1:${port}", metrics_dataset: app-metrics }
sinks:
  local: { type: local, inputs: [host, otel], dataset: fallback }
  out: { type: axiom, inputs: [host, otel], url: "${remote.url}", token: ${ingest}, dataset: fallback }
`,
    );
    const agent = startAgent(config);
    const svc = (await agent.waitLog('event service listening')).url as string;
    await agent.waitLog('agent running');
    expect(await exportMetrics(`http://127.0.0.1:${port}`, {}, 'shop')).toBe(0);
    const direct = await remote.apiToken({ '*': { ingest: ['create'] } });
    expect(
      await exportMetrics(
        remote.url,
        { authorization: `Bearer ${direct}`, 'x-axiom-metrics-dataset': 'direct' },
        'shop',
      ),
    ).toBe(0);

    const queries = [
      (ds: string) => `${ds}:requests | align using max | group by \`http.route\` using max`,
      (ds: string) => `${ds}:\`queue.depth\` | align using last`,
      (ds: string) => `${ds}:\`memory.used\` | align using last | group by pool using sum`,
      (ds: string) =>
        `${ds}:latency | bucket by \`http.route\` using interpolate_delta_histogram(count, sum, max, 0.5)`,
    ];
    const want = [
      [
        [{ 'http.route': '/a' }, [12]],
        [{ 'http.route': '/b' }, [5]],
      ],
      [[{ 'host.name': 'web-1', 'service.name': 'shop' }, [4]]],
      [[{ pool: 'heap' }, [1_048_576]]],
      [
        [{ 'http.route': '/a', spec: 'count' }, [3]],
        [{ 'http.route': '/a', spec: 'sum' }, [330]],
        [{ 'http.route': '/a', spec: 'max' }, [300]],
        // Of 3 points in buckets (0,50] twice and (100,+Inf) once, the median falls in (0, 50]: 0 + 50 × 1.5/2.
        [{ 'http.route': '/a', spec: 'p50' }, [37.5]],
      ],
    ];
    const sorted = (rows: unknown[][]) => [...rows].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    for (const [i, q] of queries.entries())
      expect(sorted(await mpl(remote.url, ADMIN, q('direct'))), q('direct')).toEqual(sorted(want[i]!));

    const answers = async (base: string) =>
      Promise.all(queries.map(async (q) => sorted(await mpl(base, ADMIN, q('`app-metrics`')))));
    const deadline = Date.now() + 30_000;
    const settled = async (base: string) => {
      for (;;) {
        const got = await answers(base);
        if (got.every((g, i) => g.length === want[i]!.length) || Date.now() > deadline) return got;
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    expect(await settled(svc)).toEqual(want.map(sorted));
    expect(await settled(remote.url)).toEqual(want.map(sorted));

    // The host's figures, from the /proc the test wrote, in both stores.
    const host = async (base: string) => {
      for (;;) {
        const used = await mpl(
          base,
          ADMIN,
          '`host-metrics`:`system.memory.usage` | where state == "used" | align using last',
        );
        const load = await mpl(base, ADMIN, '`host-metrics`:`system.cpu.load_average.5m` | align using last');
        const rx = await mpl(
          base,
          ADMIN,
          '`host-metrics`:`system.network.io` | where direction == "receive" | align using max',
        );
        if ((used.length && load.length && rx.length) || Date.now() > deadline) return { used, load, rx };
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    for (const base of [svc, remote.url])
      expect(await host(base)).toEqual({
        used: [[{ 'host.name': 'test-host', state: 'used' }, [460 * 1024]]],
        load: [[{ 'host.name': 'test-host' }, [0.25]]],
        rx: [[{ 'host.name': 'test-host', device: 'eth0', direction: 'receive' }, [5000]]],
      });
    const kinds = (await (
      await fetch(`${svc}/v2/datasets`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as { name: string; kind: string }[];
    expect(
      kinds
        .filter((d) => d.name.endsWith('-metrics'))
        .map((d) => [d.name, d.kind])
        .sort(),
    ).toEqual([
      ['app-metrics', 'otel:metrics:v1'],
      ['host-metrics', 'otel:metrics:v1'],
    ]);
  }, 60_000);

  it("holds host metrics while the receiver refuses the source's dataset, and delivers them once it exists", async () => {
    const proc = fakeProc();
    const dir = tempDir();
    const ingest = await remote.apiToken({ '*': { ingest: ['create'] } });
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `service: { enabled: false }
agent: { data_dir: ${join(dir, 'agent')}, api: { listen: 127.0.0.1:0 } }
sources:
  host: { type: host_metrics, interval: 1s, proc_path: ${proc}, host_name: late-host, collectors: [memory], dataset: late-metrics }
sinks:
  out:
    type: axiom
    inputs: [host]
    url: "${remote.url}"
    token: ${ingest}
    dataset: fallback
    retry: { initial_backoff: 100ms, max_backoff: 300ms }
`,
    );
    const agent = startAgent(config);
    const api = (await agent.waitLog('agent running')).api as string;
    // The dataset does not exist yet: 404, which the operator fixes; the queue holds, /health says why.
    const deadline = Date.now() + 20_000;
    let health = '';
    while (!/late-metrics/.test(health) && Date.now() < deadline) {
      health = await (await fetch(`${api}/health`)).text();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(health).toMatch(/late-metrics/);
    expect((await remote.call('POST', '/v2/datasets', { name: 'late-metrics', kind: 'otel:metrics:v1' })).status).toBe(
      200,
    );
    let used: unknown[][] = [];
    while (used.length === 0 && Date.now() < deadline) {
      used = await mpl(
        remote.url,
        ADMIN,
        '`late-metrics`:`system.memory.usage` | where state == "used" | align using min',
      );
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(used).toEqual([[{ 'host.name': 'late-host', state: 'used' }, [460 * 1024]]]);
    const dead = await (await fetch(`${api}/metrics`)).text();
    expect(dead).toMatch(/ferry_sink_dead_lettered_total\{sink="out"\} 0/);
  }, 60_000);
});
