/**
 * bench:ingest — sustained ingest over loopback: 1 MiB gzip NDJSON batches of realistic ~350-byte
 * access-log events, several requests in flight. Prints events/s, MB/s (uncompressed), bytes stored per
 * event and the server's peak RSS. Each run ends by checking that a count query sees every acknowledged
 * event.
 *
 * Each run starts a fresh server and data dir; the summary is the median run by events/s, because this
 * 2-core VM's speed drifts by ±15% between runs.
 *
 * Usage: npm run bench:ingest -- [--events N] [--concurrency C] [--runs R] [--progress N]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AccessLogGenerator } from './access-log.js';
import { api, cpuSeconds, datasetBlockBytes, dirSize, peakRss, startServer } from './server-process.js';
import { benchArgs } from './args.js';

const values = benchArgs(
  `usage: npm run bench:ingest -- [--events N] [--concurrency C] [--batch-bytes B] [--config FILE] [--runs R] [--progress N]`,
  {
    options: {
      events: { type: 'string', default: '2000000' },
      concurrency: { type: 'string', default: '4' },
      'batch-bytes': { type: 'string', default: String(1024 * 1024) },
      config: { type: 'string' },
      runs: { type: 'string', default: '3' },
      progress: { type: 'string', default: '0' },
    },
  },
);
const totalEvents = Number(values.events);
const concurrency = Number(values.concurrency);
const batchBytes = Number(values['batch-bytes']);
const runs = Math.max(1, Number(values.runs));
// Print the rate and server CPU per event of every `progress` events, to see whether ingest slows as the
// table grows (0: only the totals).
const progressEvery = Number(values.progress);

async function main(): Promise<void> {
  // Pre-generate distinct batches so the client costs nothing while the server is timed.
  const gen = new AccessLogGenerator(7);
  const sample = gen.ndjson(5000);
  const gzPerEvent = gzipSync(sample).length / 5000;
  const perBatch = Math.floor(batchBytes / gzPerEvent);
  const batches: { body: Buffer; events: number; rawBytes: number }[] = [];
  let generated = 0;
  let rawBytes = 0;
  while (generated < totalEvents) {
    const n = Math.min(perBatch, totalEvents - generated);
    const text = gen.ndjson(n);
    batches.push({ body: gzipSync(text), events: n, rawBytes: Buffer.byteLength(text) });
    generated += n;
    rawBytes += Buffer.byteLength(text);
  }
  const avgGz = batches.reduce((a, b) => a + b.body.length, 0) / batches.length;
  console.log(
    `generated ${generated} events in ${batches.length} batches: ${(rawBytes / generated).toFixed(0)} bytes/event, ` +
      `${perBatch} events and ${(avgGz / 1048576).toFixed(2)} MiB gzip per batch`,
  );

  const wireBytes = batches.reduce((a, b) => a + b.body.length, 0);
  const results: RunFigures[] = [];
  for (let run = 1; run <= runs; run++) {
    const r = await runOnce(batches);
    results.push(r);
    console.log(
      `run ${run}/${runs}: ${Math.round(r.ingested / r.secs).toLocaleString('en-US')} events/s, ` +
        `${r.cpu.toFixed(1)} s server CPU, peak RSS ${(r.rss / 1048576).toFixed(0)} MiB`,
    );
  }
  const r = results.sort((a, b) => a.ingested / a.secs - b.ingested / b.secs)[Math.floor(results.length / 2)]!;
  const rates = results.map((x) => Math.round(x.ingested / x.secs).toLocaleString('en-US'));
  console.log(
    `median of ${runs} runs (${r.ingested} events in ${r.secs.toFixed(1)} s, ${concurrency} requests in flight; all runs: ${rates.join(', ')})`,
  );
  console.log(`  events/s          ${Math.round(r.ingested / r.secs).toLocaleString('en-US')}`);
  console.log(`  MB/s (raw JSON)   ${(rawBytes / 1e6 / r.secs).toFixed(1)}`);
  console.log(`  MB/s (gzip wire)  ${(wireBytes / 1e6 / r.secs).toFixed(1)}`);
  console.log(
    `  server CPU        ${r.cpu.toFixed(1)} s (${(r.cpu / r.secs).toFixed(2)} cores, ${((r.cpu * 1e6) / r.ingested).toFixed(1)} us/event)`,
  );
  console.log(`  client CPU        ${r.clientCpu.toFixed(1)} s (${(r.clientCpu / r.secs).toFixed(2)} cores)`);
  console.log(
    `  bytes stored/event ${(r.stored / r.ingested).toFixed(1)} (data dir ${(r.stored / 1e6).toFixed(1)} MB after checkpoint)`,
  );
  console.log(
    `  in its table       ${(r.tableBytes / r.ingested).toFixed(1)} (the dataset's blocks, ${(r.tableBytes / 1e6).toFixed(1)} MB; the rest is the catalog's)`,
  );
  console.log(`  server peak RSS   ${(r.rss / 1048576).toFixed(0)} MiB`);
}

interface RunFigures {
  ingested: number;
  secs: number;
  cpu: number;
  clientCpu: number;
  stored: number;
  /** The dataset's own blocks in the database file. */
  tableBytes: number;
  rss: number;
}

async function runOnce(batches: { body: Buffer }[]): Promise<RunFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-ingest-'));
  const server = await startServer(dataDir, values.config ? ['--config', values.config] : []);
  try {
    await api(server.url, 'POST', '/v2/datasets', { name: 'access' });
    const { token } = (await api(server.url, 'POST', '/v2/tokens', {
      name: 'bench',
      datasetCapabilities: { access: { ingest: ['create'] } },
    })) as { token: string };

    const cpu0 = cpuSeconds(server.child.pid!);
    const client0 = process.cpuUsage();
    const t0 = performance.now();
    let next = 0;
    let ingested = 0;
    const mark = { events: 0, t: t0, cpu: cpu0 };
    const reportProgress = () => {
      const t = performance.now();
      const c = cpuSeconds(server.child.pid!);
      const n = ingested - mark.events;
      console.log(
        `  at ${ingested.toLocaleString('en-US')} events: ${Math.round(n / ((t - mark.t) / 1000)).toLocaleString('en-US')} events/s, ` +
          `${(((c - mark.cpu) * 1e6) / n).toFixed(1)} us server CPU/event`,
      );
      Object.assign(mark, { events: ingested, t, cpu: c });
    };
    const worker = async () => {
      for (let i = next++; i < batches.length; i = next++) {
        const r = await fetch(`${server.url}/v1/ingest/access`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/x-ndjson',
            'content-encoding': 'gzip',
          },
          body: new Uint8Array(batches[i]!.body),
        });
        const res = (await r.json()) as { ingested: number; failed: number };
        if (r.status !== 200 || res.failed > 0) throw new Error(`batch ${i}: ${r.status} ${JSON.stringify(res)}`);
        ingested += res.ingested;
        if (progressEvery > 0 && ingested >= mark.events + progressEvery) reportProgress();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const secs = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(server.child.pid!) - cpu0;
    const clientUsage = process.cpuUsage(client0);
    const clientCpu = (clientUsage.user + clientUsage.system) / 1e6;
    const rss = peakRss(server.child.pid!);
    // The rate counts what the server acknowledged; a query must see every one of those events.
    const counted = (await api(server.url, 'POST', '/v1/datasets/_apl?format=tabular', {
      apl: "['access'] | count",
      startTime: '1970-01-01T00:00:00Z',
      endTime: '2100-01-01T00:00:00Z',
    })) as { tables: { columns: number[][] }[] };
    const seen = Number(counted.tables[0]!.columns[0]![0]);
    if (seen !== ingested) throw new Error(`acknowledged ${ingested} events but a count query sees ${seen}`);
    await server.stop();
    const tableBytes = await datasetBlockBytes(dataDir, 'access');
    return { ingested, secs, cpu, clientCpu, stored: dirSize(dataDir), tableBytes, rss };
  } finally {
    if (server.child.exitCode === null) await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
