/**
 * bench:metrics — OTLP/HTTP metrics ingest into a metrics dataset of `ferry serve` (a child process):
 * protobuf exports (gzip) of S series (a metric among 20, a host among S/20, three tags besides), each
 * series with P points 10 s apart per export, several requests in flight. Prints points/s, the server's
 * CPU per point, and the bytes a point takes on disk after the server's closing checkpoint.
 *
 * Usage: npm run bench:metrics -- [--points N] [--series S] [--per-export P] [--concurrency C]
 */
import { exportRequest } from '../src/ingest/otlp-metrics-encode.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { benchArgs } from './args.js';
import { api, cpuSeconds, dirSize, peakRss, startServer } from './server-process.js';

const values = benchArgs(
  'usage: npm run bench:metrics -- [--points N] [--series S] [--per-export P] [--concurrency C]',
  {
    options: {
      points: { type: 'string', default: '4000000' },
      series: { type: 'string', default: '1000' },
      'per-export': { type: 'string', default: '10' },
      concurrency: { type: 'string', default: '4' },
    },
  },
);
const totalPoints = Number(values.points);
const seriesCount = Number(values.series);
const perExport = Number(values['per-export']);
const concurrency = Number(values.concurrency);

const Request = exportRequest();

const T0 = 1_767_225_600;
const str = (key: string, v: string) => ({ key, value: { stringValue: v } });

/** Export k: every series' points k*P .. k*P+P-1, grouped by host (a resource each). */
function exportBody(k: number): Buffer {
  const hosts = Math.max(1, Math.floor(seriesCount / 20));
  const resourceMetrics = Array.from({ length: hosts }, (_, h) => ({
    resource: { attributes: [str('host.name', `host-${h}`), str('service.name', 'bench'), str('region', `r${h % 4}`)] },
    scopeMetrics: [
      {
        metrics: Array.from({ length: 20 }, (_, m) => ({
          name: `system.metric.${m}`,
          unit: 'By',
          gauge: {
            dataPoints: Array.from({ length: perExport }, (_, i) => ({
              timeUnixNano: `${T0 + (k * perExport + i) * 10}000000000`,
              asDouble: Math.round(Math.sin(h + m + i) * 1e6) / 100,
              attributes: [str('state', m % 2 ? 'used' : 'free')],
            })),
          },
        })),
      },
    ],
  }));
  return gzipSync(Request.encode(Request.fromObject({ resourceMetrics })).finish());
}

async function main(): Promise<void> {
  const pointsPerExport = Math.max(1, Math.floor(seriesCount / 20)) * 20 * perExport;
  const exports = Math.ceil(totalPoints / pointsPerExport);
  const bodies = Array.from({ length: exports }, (_, k) => exportBody(k));
  const wire = bodies.reduce((n, b) => n + b.length, 0);
  console.log(
    `${exports} exports of ${pointsPerExport} points (${seriesCount} series), ${(wire / exports / 1024).toFixed(0)} KiB gzip each`,
  );
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-metrics-'));
  const server = await startServer(dataDir);
  try {
    await api(server.url, 'POST', '/v2/datasets', { name: 'host', kind: 'otel:metrics:v1' });
    const { token } = (await api(server.url, 'POST', '/v2/tokens', {
      name: 'bench',
      datasetCapabilities: { host: { ingest: ['create'] } },
    })) as { token: string };
    const cpu0 = cpuSeconds(server.child.pid!);
    const t0 = performance.now();
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < bodies.length; i = next++) {
        const r = await fetch(`${server.url}/v1/metrics`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/x-protobuf',
            'content-encoding': 'gzip',
            'x-axiom-metrics-dataset': 'host',
          },
          body: new Uint8Array(bodies[i]!),
        });
        if (r.status !== 200) throw new Error(`export ${i}: ${r.status} ${await r.text()}`);
        await r.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const secs = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(server.child.pid!) - cpu0;
    const points = exports * pointsPerExport;
    const rss = peakRss(server.child.pid!);
    const before = dirSize(dataDir);
    await server.stop();
    const stored = dirSize(dataDir);
    console.log(
      `  points/s          ${Math.round(points / secs).toLocaleString('en-US')} (${points.toLocaleString('en-US')} in ${secs.toFixed(1)} s, ${concurrency} in flight)`,
    );
    console.log(`  server CPU        ${cpu.toFixed(1)} s (${((cpu * 1e6) / points).toFixed(2)} us/point)`);
    console.log(
      `  bytes/point       ${(stored / points).toFixed(2)} on disk after the closing checkpoint (${(before / points).toFixed(2)} before it)`,
    );
    console.log(`  gzip wire/point   ${(wire / points).toFixed(2)}`);
    console.log(`  server peak RSS   ${(rss / 1048576).toFixed(0)} MiB`);
  } finally {
    await server.stop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
