/**
 * bench:agent — ships a 1 GiB NDJSON file of access-log events through `ferry agent` (remote-only, a child
 * process) to a receiver in this process that decompresses each batch and counts its lines, and prints
 * MB/s, lines/s, CPU seconds (agent and receiver) and the agent's peak RSS, in two modes:
 *   passthrough      no parse transform: JSON lines are shipped as they are (zstd level 1 unless BENCH_COMPRESSION says otherwise)
 *   parse-and-enrich parse json + enrich (host, source path, a static field): every line parsed and
 *                    re-serialised
 * The file is generated once and kept in the temp directory (reused by later runs).
 *
 *   apl              parse json + an `apl` transform (a filter that keeps every event, two fields added,
 *                    one taken away), compiled to JavaScript closures, then a `route` whose three
 *                    outputs (errors, slow, the rest) meet at the sink
 *   syslog           the same events as RFC 3164 syslog lines (`<13>… host app: {json}`) sent over one TCP
 *                    connection to a `syslog` source (parsed into fields, shipped as JSON)
 *   relay            the same events posted to an `http` source as an app's Axiom client would: NDJSON
 *                    bodies of 1,000 events, gzip-compressed beforehand, 4 requests in flight, from a
 *                    process of its own (bench/relay-sender.ts)
 *
 * Usage: npm run bench:agent -- [--mb 1024] [--mode passthrough|parse|apl|syslog|relay|both|all]
 * Environment: BENCH_COMPRESSION=zstd|gzip|none (the sink's compression, default zstd as the sink's),
 * BENCH_CONCURRENCY (batches in flight; default: the sink's default), BENCH_NODE_ARGS (flags for the agent's node,
 * after the daemon's own DAEMON_NODE_FLAGS).
 */
import { spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';
import { createInterface } from 'node:readline';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzip, gzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import { decompress as zstdDecompress } from 'zstd-napi';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../src/cli/node-flags.js';
import { AccessLogGenerator } from './access-log.js';
import { cpuSeconds, peakRss } from './server-process.js';
import { benchArgs } from './args.js';

const gunzipAsync = promisify(gunzip);
const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const RELAY_SENDER = fileURLToPath(new URL('./relay-sender.js', import.meta.url));

const values = benchArgs(
  `usage: npm run bench:agent -- [--mb 1024] [--mode passthrough|parse|apl|syslog|relay|both|all]`,
  {
    options: {
      mb: { type: 'string', default: '1024' },
      mode: { type: 'string', default: 'both' },
    },
  },
);
const targetBytes = Number(values.mb) * 1024 * 1024;

async function generate(): Promise<{ file: string; lines: number; bytes: number }> {
  const file = join(tmpdir(), `ferry-bench-agent-${values.mb}MiB.ndjson`);
  const meta = `${file}.lines`;
  if (existsSync(file) && existsSync(meta)) {
    const lines = Number((await import('node:fs')).readFileSync(meta, 'utf8'));
    return { file, lines, bytes: statSync(file).size };
  }
  const gen = new AccessLogGenerator(11);
  const tmp = `${file}.tmp`;
  const out = createWriteStream(tmp);
  let bytes = 0;
  let lines = 0;
  while (bytes < targetBytes) {
    const chunk = `${gen.ndjson(5000)}\n`;
    bytes += Buffer.byteLength(chunk);
    lines += 5000;
    if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
  renameSync(tmp, file);
  writeFileSync(meta, String(lines));
  return { file, lines, bytes };
}

/** Counts the lines of every batch it is sent (gunzip on libuv's pool, like a real receiver). */
async function startReceiver(): Promise<{
  url: string;
  lines: () => number;
  wireBytes: () => number;
  close: () => Promise<void>;
}> {
  let lines = 0;
  let wire = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      wire += raw.length;
      const enc = req.headers['content-encoding'];
      const body = enc === 'gzip' ? await gunzipAsync(raw) : enc === 'zstd' ? zstdDecompress(raw) : raw;
      let n = 0;
      for (let i = body.indexOf(10); i >= 0; i = body.indexOf(10, i + 1)) n++;
      if (body.length > 0 && body[body.length - 1] !== 10) n++;
      lines += n;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ingested: n,
          failed: 0,
          failures: [],
          processedBytes: body.length,
          blocksCreated: 0,
          walLength: 0,
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    lines: () => lines,
    wireBytes: () => wire,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The same events as syslog lines, generated once beside the NDJSON file. */
async function syslogFile(data: { file: string }): Promise<string> {
  const file = data.file.replace(/\.ndjson$/, '.syslog');
  if (existsSync(file)) return file;
  const out = createWriteStream(`${file}.tmp`);
  const lines = createInterface({ input: createReadStream(data.file) });
  for await (const line of lines) {
    if (!out.write(`<13>Nov 23 19:05:01 web-1 app[42]: ${line}\n`))
      await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
  renameSync(`${file}.tmp`, file);
  return file;
}

/** The same events as gzip-compressed NDJSON bodies of RELAY_EVENTS lines ([u32 length][body]…), made once. */
const RELAY_EVENTS = 1000;
async function relayFile(data: { file: string }): Promise<string> {
  const file = data.file.replace(/\.ndjson$/, '.relay');
  if (existsSync(file)) return file;
  const out = createWriteStream(`${file}.tmp`);
  const write = async (lines: string[]) => {
    const body = gzipSync(`${lines.join('\n')}\n`);
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.length, 0);
    out.write(head);
    if (!out.write(body)) await new Promise<void>((r) => out.once('drain', () => r()));
  };
  let lines: string[] = [];
  for await (const line of createInterface({ input: createReadStream(data.file) })) {
    lines.push(line);
    if (lines.length === RELAY_EVENTS) {
      await write(lines);
      lines = [];
    }
  }
  if (lines.length) await write(lines);
  await new Promise<void>((r) => out.end(() => r()));
  renameSync(`${file}.tmp`, file);
  return file;
}

/** Waits until something listens on the port. */
async function listening(port: number, what: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    const ok = await new Promise<boolean>((resolve) => {
      const probe = connect(port, '127.0.0.1', () => {
        probe.destroy();
        resolve(true);
      });
      probe.once('error', () => resolve(false));
    });
    if (ok) return;
    if (tries > 200) throw new Error(`the ${what} did not listen`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The apl mode's pipeline: a filter that keeps every event (as parse mode ships them all), fields added, one taken away. */
const APL_QUERY =
  "where status >= 200 and method != 'TRACE' | extend slow = request_time > 0.5, api = uri startswith '/api' | project-away http_referer";

type Mode = 'passthrough' | 'parse' | 'apl' | 'syslog' | 'relay';
const MODES: readonly Mode[] = ['passthrough', 'parse', 'apl', 'syslog', 'relay'];
const TITLE: Record<Mode, string> = {
  passthrough: 'passthrough',
  parse: 'parse-and-enrich',
  apl: 'parse, an apl transform and a route',
  syslog: 'syslog over TCP',
  relay: 'http relay (gzip bodies of 1,000 events)',
};

async function run(mode: Mode, data: { file: string; lines: number; bytes: number }): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-agent-'));
  const receiver = await startReceiver();
  const port = mode === 'syslog' || mode === 'relay' ? await freePort() : 0;
  const source =
    mode === 'syslog'
      ? `net: { type: syslog, mode: tcp, address: "127.0.0.1:${port}" }`
      : mode === 'relay'
        ? `net: { type: http, address: "127.0.0.1:${port}", tokens: [bench-token] }`
        : `file: { type: file, include: ["${data.file}"], start_at: beginning }`;
  const syslogData = mode === 'syslog' ? await syslogFile(data) : undefined;
  const relayData = mode === 'relay' ? await relayFile(data) : undefined;
  const transforms =
    mode === 'parse'
      ? `transforms:
  parse: { type: parse, inputs: [file], parser: json }
  enrich: { type: enrich, inputs: [parse], host: true, source_path: true, fields: { environment: bench } }
`
      : mode === 'apl'
        ? `transforms:
  parse: { type: parse, inputs: [file], parser: json }
  shape: { type: apl, inputs: [parse], query: "${APL_QUERY}" }
  split: { type: route, inputs: [shape], routes: { errors: "status >= 500", slow: "status < 500 and slow" } }
`
        : '';
  const config = join(dir, 'agent.yaml');
  writeFileSync(
    config,
    `
log: { level: warn }
service: { enabled: false }
agent:
  data_dir: ${join(dir, 'state')}
  api: { enabled: false }
sources:
  ${source}
${transforms}
sinks:
  out:
    type: axiom
    inputs: [${mode === 'parse' ? 'enrich' : mode === 'apl' ? 'split.errors, split.slow, split._unmatched' : mode === 'syslog' || mode === 'relay' ? 'net' : 'file'}]
    url: ${receiver.url}
    token: xaat-bench
    dataset: bench
    compression: ${process.env.BENCH_COMPRESSION ?? 'zstd'}
${process.env.BENCH_CONCURRENCY ? `    concurrency: ${process.env.BENCH_CONCURRENCY}\n` : ''}`,
  );
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // Started as systemd, Docker and npm start start it; BENCH_NODE_ARGS come after, so they can override.
  const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, ...nodeArgs, MAIN, 'agent', '-c', config], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...DAEMON_ENV, ...process.env },
  });
  if (port) await listening(port, `${mode} source`);
  const recv0 = process.cpuUsage();
  const t0 = performance.now();
  // The sender is a process of its own, as a real one is: not on the receiver's event loop. Syslog goes as
  // one sender would send it: one connection, written as fast as the agent reads it.
  const sender = syslogData
    ? spawn(
        process.execPath,
        [
          '-e',
          `require('fs').createReadStream(${JSON.stringify(syslogData)}).pipe(require('net').connect(${port}, '127.0.0.1'))`,
        ],
        { stdio: 'inherit' },
      )
    : relayData
      ? spawn(
          process.execPath,
          [RELAY_SENDER, relayData, String(port), 'bench-token', process.env.BENCH_IN_FLIGHT ?? '4'],
          {
            stdio: 'inherit',
          },
        )
      : undefined;
  let agentCpu = 0;
  let rss = 0;
  while (receiver.lines() < data.lines) {
    if (child.exitCode !== null) throw new Error(`agent exited with ${child.exitCode}`);
    if (sender?.exitCode) throw new Error(`the sender exited with ${sender.exitCode}`);
    await new Promise((r) => setTimeout(r, 50));
    agentCpu = cpuSeconds(child.pid!);
    rss = peakRss(child.pid!);
  }
  const secs = (performance.now() - t0) / 1000;
  const recvUsage = process.cpuUsage(recv0);
  const recvCpu = (recvUsage.user + recvUsage.system) / 1e6;
  sender?.kill();
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(
    `${TITLE[mode]}: ${data.lines.toLocaleString('en-US')} lines, ${(data.bytes / 1048576).toFixed(0)} MiB in ${secs.toFixed(1)} s`,
  );
  console.log(`  MB/s              ${(data.bytes / 1e6 / secs).toFixed(1)}`);
  console.log(`  lines/s           ${Math.round(data.lines / secs).toLocaleString('en-US')}`);
  console.log(`  agent CPU         ${agentCpu.toFixed(1)} s (${(agentCpu / secs).toFixed(2)} cores)`);
  console.log(`  MB per agent CPU-s ${(data.bytes / 1e6 / agentCpu).toFixed(0)}`);
  console.log(
    `  bytes on the wire ${(receiver.wireBytes() / 1048576).toFixed(1)} MiB (${(data.bytes / receiver.wireBytes()).toFixed(2)}× smaller than the lines)`,
  );
  console.log(`  receiver CPU      ${recvCpu.toFixed(1)} s (${(recvCpu / secs).toFixed(2)} cores)`);
  console.log(`  agent peak RSS    ${(rss / 1048576).toFixed(0)} MiB`);
}

async function main(): Promise<void> {
  const data = await generate();
  console.log(
    `input: ${data.file} (${(data.bytes / 1048576).toFixed(0)} MiB, ${data.lines.toLocaleString('en-US')} lines, ${(data.bytes / data.lines).toFixed(0)} bytes/line)`,
  );
  const modes = values.mode === 'both' ? ['passthrough', 'parse'] : values.mode === 'all' ? MODES : [values.mode];
  for (const mode of modes) {
    if (!MODES.includes(mode as Mode)) throw new Error(`unknown --mode ${mode}`);
    await run(mode as Mode, data);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
