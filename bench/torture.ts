/**
 * The agent's first promise, tried adversarially: a line written to a watched file reaches the receiver
 * at least once, whole, whatever happens meanwhile. A seeded random schedule drives the real agent binary
 * (a child process) and a real HTTP receiver through appends (some lines written in two parts), rename
 * rotations re-created 0–500 ms later, copytruncate with the writer paused across the copy, truncation,
 * deletion of drained rotations, kill -9 and restart of the agent, and receiver restarts; then every line
 * written is looked for at the receiver. Used by `npm test` (about a minute) and `npm run soak`.
 *
 * The seed also draws the topology: the file straight to the sink, through a parse transform, a diamond
 * (the sink reads the file directly and through multiline → parse → enrich, which tags its copies), or a
 * fan-out (one sink reads the file, another its multiline-joined lines), or a filter (the sink reads the
 * file directly and through an apl transform that drops every third line), or a route (three paths to one
 * sink, one through a sample). Each copy of a line, one per
 * path, must arrive: a multiline transform holds a line back while the other copy is acknowledged, and a
 * dropped line's place is acknowledged on its path.
 *
 * What the README allows and this checks: no line lost; no line torn or merged (each arrives as written);
 * duplicates only from a kill -9 (what was read since the last checkpoint save, and the batches in flight)
 * or a receiver that went away mid-request (the batches in flight). copytruncate and truncation happen
 * once what was written is delivered: lines written and not yet read when a file is truncated are gone
 * by the nature of truncation (see the README).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzip } from 'node:zlib';
import { decompress as zstdDecompress } from 'zstd-napi';
import { hashOf } from '../src/agent/transforms/sample.js';
import { promisify } from 'node:util';

const gunzipAsync = promisify(gunzip);
/** The compiled CLI, whether this module runs compiled (npm run soak) or from its source (the tests). */
const MAIN = fileURLToPath(
  new URL(import.meta.url.includes('/dist/bench/') ? '../src/cli/main.js' : '../dist/src/cli/main.js', import.meta.url),
);

/** sfc32: a small seeded generator, so a failing schedule can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let a = 0x9e3779b9,
    b = 0x243f6a88,
    c = 0xb7e15162,
    d = seed >>> 0;
  const next = () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    const r = (t + d) | 0;
    c = (c + r) | 0;
    return (r >>> 0) / 4294967296;
  };
  for (let i = 0; i < 15; i++) next();
  return next;
}

export interface TortureOptions {
  seed: number;
  /** How long the schedule runs, before the final wait for delivery. */
  durationMs: number;
  /** Progress lines (the soak prints them; the test does not). */
  log?: (line: string) => void;
  /** The topology, instead of the one the seed draws (the schedule is the seed's all the same). */
  mode?: Topology;
}

export interface TortureReport {
  seed: number;
  mode: Topology;
  written: number;
  delivered: number;
  lost: number;
  duplicated: number;
  /** Duplicates the README's rule allows for the kills and receiver restarts of this run. */
  allowedDuplicates: number;
  /** Lines that arrived but are not a line as written: torn, merged or altered. */
  torn: number;
  ops: Record<string, number>;
  /** The first lost lines, for the failure message. */
  lostSample: string[];
  tornSample: string[];
}

export type Topology = 'passthrough' | 'parse' | 'diamond' | 'fanout' | 'filter' | 'route';
export const TOPOLOGIES = ['passthrough', 'parse', 'diamond', 'fanout', 'filter', 'route'] as const;

/** The copies of each line a topology delivers: `dataset/via` (the enrich tag, `-` for none). */
const COPIES: Record<Topology, string[]> = {
  passthrough: ['torture/-'],
  parse: ['torture/-'],
  diamond: ['torture/-', 'torture/joined'],
  fanout: ['torture/-', 'torture-b/-'],
  filter: ['torture/-', 'torture/kept'],
  route: ['torture/-', 'torture/a', 'torture/b'],
};

/** The `route` topology's sample keeps the lines whose id hashes to an even number. */
const sampledIn = (seq: number) => hashOf(`w${seq}`) % 2 === 0;

/**
 * Copies that only some lines have: the `filter` topology's apl transform drops every third line; the
 * `route` topology sends every third line one way, every second line (sampled) another, the rest to
 * `_unmatched`.
 */
const ONLY: Partial<Record<Topology, Record<string, (seq: number) => boolean>>> = {
  filter: { 'torture/kept': (seq) => seq % 3 !== 0 },
  route: {
    'torture/a': (seq) => seq % 3 === 0,
    'torture/b': (seq) => seq % 2 === 0 && sampledIn(seq),
    'torture/-': (seq) => seq % 3 !== 0 && seq % 2 !== 0,
  },
};
const hasCopy = (mode: Topology, copy: string, seq: number) => ONLY[mode]?.[copy]?.(seq) ?? true;

/** The transforms and sinks of each topology (the sinks' common settings are added to each). */
function topologyConfig(mode: Topology): { transforms: string; sinks: Record<string, string> } {
  const multiline = `  joined: { type: multiline, inputs: [app], start: '^\\{' }\n`;
  switch (mode) {
    case 'passthrough':
      return { transforms: '', sinks: { out: 'inputs: [app], dataset: torture' } };
    case 'parse':
      return {
        transforms: '  parse: { type: parse, inputs: [app], parser: json }\n',
        sinks: { out: 'inputs: [parse], dataset: torture' },
      };
    case 'diamond':
      return {
        transforms: `${multiline}  parsed: { type: parse, inputs: [joined], parser: json }\n  tagged: { type: enrich, inputs: [parsed], fields: { via: joined } }\n`,
        sinks: { out: 'inputs: [tagged, app], dataset: torture' },
      };
    case 'fanout':
      return {
        transforms: multiline,
        sinks: { out: 'inputs: [app], dataset: torture', out_b: 'inputs: [joined], dataset: torture-b' },
      };
    case 'filter':
      // The sink reads the file directly and through a filter that drops a third of the lines: the lines
      // it drops are acknowledged on that path as if delivered, or the file would be read again from them.
      return {
        transforms: `  parse: { type: parse, inputs: [app], parser: json }
  kept: { type: apl, inputs: [parse], query: "where seq % 3 != 0 | extend via = 'kept'" }
`,
        sinks: { out: 'inputs: [kept, app], dataset: torture' },
      };
    case 'route':
      // A route with three paths to one sink (a line matching both conditions takes two), one through a
      // sample keyed by the line's id: a line is acknowledged once each path has it durable or passed it by.
      return {
        transforms: `  parse: { type: parse, inputs: [app], parser: json }
  split: { type: route, inputs: [parse], routes: { third: "seq % 3 == 0", second: "seq % 2 == 0" } }
  ta: { type: apl, inputs: [split.third], query: "extend via = 'a'" }
  half: { type: sample, inputs: [split.second], rate: 2, key: id }
  tb: { type: apl, inputs: [half], query: "extend via = 'b'" }
`,
        sinks: { out: 'inputs: [ta, tb, split._unmatched], dataset: torture' },
      };
  }
}

const BATCH_EVENTS = 200;
const CONCURRENCY = 3;
const CHECKPOINT_MS = 200;

/** Lines the writer writes: an id, its sequence number, and a pad whose length the line states. */
function lineOf(seq: number, padLen: number): string {
  return `${JSON.stringify({ id: `w${seq}`, seq, len: padLen, pad: 'x'.repeat(padLen) })}\n`;
}

/** The receiver: counts each line by id, checks it is whole, and can go away and come back on its port. */
class Receiver {
  /** Arrivals of each line's sequence number, per copy (`dataset/via`). */
  readonly seen = new Map<string, Map<number, number>>();
  readonly torn: string[] = [];
  private server: Server | undefined;
  port = 0;

  async up(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => server.listen(this.port, '127.0.0.1', () => r()));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const enc = req.headers['content-encoding'];
    const body = enc === 'gzip' ? await gunzipAsync(raw) : enc === 'zstd' ? zstdDecompress(raw) : raw;
    const dataset = decodeURIComponent(/\/v1\/ingest\/([^/?]+)/.exec(req.url ?? '')?.[1] ?? '?');
    const lines = body
      .toString('utf8')
      .split('\n')
      .filter((l) => l.length > 0);
    for (const l of lines) {
      let e: { seq?: unknown; len?: unknown; pad?: unknown; id?: unknown; via?: unknown };
      try {
        e = JSON.parse(l) as typeof e;
      } catch {
        this.torn.push(l.slice(0, 200));
        continue;
      }
      if (
        typeof e.seq !== 'number' ||
        e.id !== `w${e.seq}` ||
        typeof e.pad !== 'string' ||
        e.pad.length !== e.len ||
        /[^x]/.test(e.pad)
      ) {
        this.torn.push(l.slice(0, 200));
        continue;
      }
      const copy = `${dataset}/${typeof e.via === 'string' ? e.via : '-'}`;
      let counts = this.seen.get(copy);
      if (!counts) this.seen.set(copy, (counts = new Map()));
      counts.set(e.seq, (counts.get(e.seq) ?? 0) + 1);
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        ingested: lines.length,
        failed: 0,
        failures: [],
        processedBytes: body.length,
        blocksCreated: 0,
        walLength: 0,
      }),
    );
  }
}

/** The agent binary as a child process, with the address of its API (for its metrics). */
class AgentProcess {
  child: ChildProcess | undefined;
  api: string | undefined;
  private stderr = '';

  constructor(private readonly config: string) {}

  async start(): Promise<void> {
    this.api = undefined;
    this.stderr = '';
    const child = spawn(process.execPath, [MAIN, 'agent', this.config], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let buf = '';
    // The agent's log is on stderr, one JSON object a line.
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
      buf += d.toString();
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.includes('"agent running"')) this.api = (JSON.parse(line) as { api: string }).api;
      }
    });
    const end = Date.now() + 30_000;
    while (this.api === undefined) {
      if (child.exitCode !== null) throw new Error(`the agent exited (${child.exitCode}) at start: ${this.stderr}`);
      if (Date.now() > end) throw new Error(`the agent did not start within 30 s: ${this.stderr}`);
      await sleep(20);
    }
  }

  /** Lines read so far by this process (its counter). */
  async linesRead(): Promise<number | undefined> {
    if (!this.api) return undefined;
    try {
      const text = await (await fetch(`${this.api}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
      const m = /^ferry_source_lines_total\{source="app"\} (\d+)$/m.exec(text);
      return m ? Number(m[1]) : undefined;
    } catch {
      return undefined;
    }
  }

  async kill(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
    this.api = undefined;
  }

  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(t);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function torture(o: TortureOptions): Promise<TortureReport> {
  const rnd = seededRandom(o.seed);
  const pick = (n: number) => Math.floor(rnd() * n);
  const drawn = TOPOLOGIES[pick(TOPOLOGIES.length)]!;
  const mode = o.mode ?? drawn;
  const expected = COPIES[mode];
  const topology = topologyConfig(mode);
  const dir = mkdtempSync(join(tmpdir(), 'ferry-torture-'));
  const logs = join(dir, 'logs');
  const copies = join(dir, 'copies');
  mkdirSync(logs);
  mkdirSync(copies);
  const file = join(logs, 'app.log');
  const receiver = new Receiver();
  await receiver.up();
  const config = join(dir, 'agent.yaml');
  // Rotated names match the include, so a kill during a rotation cannot lose the renamed file's tail.
  writeFileSync(
    config,
    `
log: { level: info }
service: { enabled: false }
agent:
  data_dir: ${join(dir, 'state')}
  api: { listen: 127.0.0.1:0 }
  shutdown_timeout: 10s
sources:
  app:
    type: file
    include: ["${logs}/*.log*"]
    poll_interval: 50ms
    rotate_wait: 1s
    checkpoint_interval: ${CHECKPOINT_MS}ms
${topology.transforms ? `transforms:\n${topology.transforms}` : ''}
sinks:
${Object.entries(topology.sinks)
  .map(
    ([name, wiring]) => `  ${name}: {
    ${wiring}, type: axiom, url: "http://127.0.0.1:${receiver.port}", token: xaat-torture,
    concurrency: ${CONCURRENCY}, batch: { max_events: ${BATCH_EVENTS}, timeout: 50ms },
    retry: { initial_backoff: 20ms, max_backoff: 500ms } }`,
  )
  .join('\n')}
`,
  );
  const agent = new AgentProcess(config);
  const ops: Record<string, number> = {};
  const count = (op: string) => (ops[op] = (ops[op] ?? 0) + 1);
  let seq = 0;
  let rotations = 0;
  /** Rotated files and the highest sequence number each holds. */
  const rotated: { path: string; last: number }[] = [];
  /** Lines read by the agent, sampled, to bound what a kill may repeat. */
  let samples: { at: number; lines: number }[] = [];
  let allowedDuplicates = 0;
  const writeLines = (n: number) => {
    let out = '';
    for (let i = 0; i < n; i++) out += lineOf(seq++, pick(300));
    appendFileSync(file, out);
  };
  const delivered = (upTo: number) => {
    for (const copy of expected) {
      const counts = receiver.seen.get(copy);
      for (let s = 0; s < upTo; s++) if (hasCopy(mode, copy, s) && !counts?.has(s)) return false;
    }
    return true;
  };
  const waitDelivered = async (ms: number): Promise<boolean> => {
    const end = Date.now() + ms;
    const upTo = seq;
    while (!delivered(upTo)) {
      if (Date.now() > end) return false;
      await sleep(20);
    }
    return true;
  };

  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const lines = await agent.linesRead();
      if (lines !== undefined) samples.push({ at: Date.now(), lines });
      samples = samples.filter((s) => s.at > Date.now() - 5000);
      await sleep(50);
    }
  })();

  try {
    writeFileSync(file, '');
    await agent.start();
    const end = Date.now() + o.durationMs;
    let lastLog = Date.now();
    while (Date.now() < end) {
      const r = rnd();
      if (r < 0.45) {
        count('append');
        writeLines(1 + pick(200));
        if (rnd() < 0.3) {
          // A line written in two parts: the agent must wait for its end.
          count('split line');
          const l = lineOf(seq++, pick(300));
          const at = 1 + pick(l.length - 2);
          appendFileSync(file, l.slice(0, at));
          await sleep(pick(120));
          appendFileSync(file, l.slice(at));
        }
      } else if (r < 0.6) {
        count('rename rotation');
        const to = `${file}.${++rotations}`;
        renameSync(file, to);
        rotated.push({ path: to, last: seq - 1 });
        // The writer's next line goes to a new file, created 0-500 ms after the rename.
        await sleep(pick(501));
        writeLines(1 + pick(50));
      } else if (r < 0.67) {
        // copytruncate: the copy is not tailed (another directory), so what was written must be delivered
        // first; the writer is paused across the copy and the truncation.
        if (await waitDelivered(30_000)) {
          count('copytruncate');
          copyFileSync(file, join(copies, `app.log.${++rotations}`));
          truncateSync(file, 0);
          writeLines(1 + pick(50));
        }
      } else if (r < 0.72) {
        if (await waitDelivered(30_000)) {
          count('truncate');
          truncateSync(file, 0);
          writeLines(1 + pick(50));
        }
      } else if (r < 0.78) {
        // Rotated files whose lines are all delivered are deleted, as logrotate's `rotate N` does.
        for (const f of rotated.filter((x) => delivered(x.last + 1) && existsSync(x.path))) {
          count('delete drained rotation');
          unlinkSync(f.path);
        }
      } else if (r < 0.88) {
        count('kill -9 and restart');
        // What a kill may repeat: the lines read since the last checkpoint save (one interval, and the save
        // itself), and the batches in flight.
        const now = Date.now();
        const current = await agent.linesRead();
        const before = samples.filter((s) => s.at <= now - 2 * CHECKPOINT_MS - 100).at(-1);
        // Without a sample that old, everything this process read may come again.
        const readSince = current === undefined ? (samples.at(-1)?.lines ?? 0) : current - (before?.lines ?? 0);
        await agent.kill();
        samples = [];
        // Every copy repeats, plus the line a multiline transform held back.
        allowedDuplicates += expected.length * (Math.max(0, readSince) + 1 + CONCURRENCY * BATCH_EVENTS);
        writeLines(pick(100));
        await sleep(pick(300));
        await agent.start();
      } else {
        count('receiver restart');
        await receiver.down();
        writeLines(pick(100));
        await sleep(pick(1000));
        await receiver.up();
        allowedDuplicates += Object.keys(topology.sinks).length * CONCURRENCY * BATCH_EVENTS;
      }
      await sleep(pick(60));
      if (o.log && Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        o.log(`  ${seq} lines written, ${receiver.seen.get(expected[0]!)?.size ?? 0} delivered so far`);
      }
    }
    await waitDelivered(60_000);
    await agent.stop();
  } finally {
    sampling = false;
    await sampler;
    await agent.kill();
    await receiver.down();
  }
  const lost: string[] = [];
  let duplicated = 0;
  for (const copy of expected) {
    const counts = receiver.seen.get(copy);
    for (let s = 0; s < seq; s++) {
      const n = counts?.get(s) ?? 0;
      if (!hasCopy(mode, copy, s)) {
        if (n > 0) receiver.torn.push(`w${s} (${copy}): a line its path drops arrived`);
      } else if (n === 0) lost.push(expected.length > 1 ? `w${s} (${copy})` : `w${s}`);
      else duplicated += n - 1;
    }
  }
  const strays = [...receiver.seen.keys()].filter((c) => !expected.includes(c));
  rmSync(dir, { recursive: true, force: true });
  return {
    seed: o.seed,
    mode,
    written: seq,
    delivered: Math.min(...expected.map((c) => receiver.seen.get(c)?.size ?? 0)),
    lost: lost.length,
    duplicated,
    allowedDuplicates,
    torn: receiver.torn.length + strays.length,
    ops,
    lostSample: lost.slice(0, 20),
    tornSample: [...receiver.torn.slice(0, 5), ...strays.map((c) => `a copy no path makes: ${c}`)],
  };
}

/** One line for people: what was written, delivered, lost, duplicated and torn, and the seed to replay it. */
export function describeReport(r: TortureReport): string {
  const ops = Object.entries(r.ops)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return (
    `seed ${r.seed} (${r.mode}): ${r.written} lines written, ${r.delivered} delivered, ${r.lost} lost, ${r.duplicated} duplicated ` +
    `(allowed ${r.allowedDuplicates}), ${r.torn} torn or merged; ${ops}`
  );
}
