/**
 * The agent as a child process (`ferry agent -c FILE`, its JSON log collected), and a receiver that
 * counts what it is sent and can go down and come back on the same port: for the tests that drive the
 * real binary. `stopAgentsAndReceivers` ends whatever a test left running.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { decompress as zstdDecompress } from 'zstd-napi';
import { ADMIN } from './helpers.js';

const CLI = 'dist/src/cli/main.js';

// ---- a receiver that counts what it is sent, and can go down and come back on the same port ----------

export class Receiver {
  readonly seen = new Map<string, number>();
  readonly events: Record<string, unknown>[] = [];
  readonly lines: string[] = [];
  /** Each delivered batch: its dataset (from the path), query parameters, labels header and events. */
  readonly batches: { dataset: string; query: string; labels?: string; events: Record<string, unknown>[] }[] = [];
  requests = 0;
  delayMs = 0;
  /** When set, requests with another bearer token are answered 401, as Axiom does. */
  token: string | undefined;
  /** When set, every batch is refused with 400 and this message. */
  refuse: string | undefined;
  private server: Server | undefined;
  port = 0;

  /** Listens (on the same port as before, if it listened before); nothing if it is up already. */
  async up(): Promise<void> {
    if (this.server) return;
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(this.port, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get duplicates(): number {
    return [...this.seen.values()].reduce((a, n) => a + n - 1, 0);
  }

  private async handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    this.requests++;
    if (this.token !== undefined && req.headers.authorization !== `Bearer ${this.token}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 401, message: 'invalid or expired token' }));
      return;
    }
    if (this.refuse !== undefined) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 400, message: this.refuse }));
      return;
    }
    const raw = Buffer.concat(chunks);
    const enc = req.headers['content-encoding'];
    const body = enc === 'gzip' ? gunzipSync(raw) : enc === 'zstd' ? zstdDecompress(raw) : raw;
    const lines = body.toString().split('\n').filter(Boolean);
    this.lines.push(...lines);
    const [path = '', query = ''] = (req.url ?? '').split('?');
    const batch = {
      dataset: decodeURIComponent(path.split('/').pop() ?? ''),
      query,
      ...(req.headers['x-axiom-event-labels'] ? { labels: String(req.headers['x-axiom-event-labels']) } : {}),
      events: [] as Record<string, unknown>[],
    };
    this.batches.push(batch);
    for (const l of lines) {
      const e = JSON.parse(l) as Record<string, unknown>;
      this.events.push(e);
      batch.events.push(e);
      const id = String(e.id ?? e.message ?? e.MESSAGE);
      this.seen.set(id, (this.seen.get(id) ?? 0) + 1);
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

// ---- the agent as a child process -------------------------------------------------------------------

export interface AgentProcess {
  child: ChildProcess;
  /** Its log lines (stderr), parsed; a line that is no JSON as {msg: line}. */
  logs: Record<string, unknown>[];
  waitLog(msg: string, ms?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  /** What it wrote to stderr so far: its log, and what a console sink writes there. */
  stderr(): string;
  /** What it wrote to stdout so far (a console sink's events). */
  stdout(): string;
}

const children: ChildProcess[] = [];
const receivers: Receiver[] = [];

/** A receiver up on a random port (or `port`), ended by stopAgentsAndReceivers. */
export async function startReceiver(): Promise<Receiver> {
  const r = new Receiver();
  receivers.push(r);
  await r.up();
  return r;
}

/** A child process stopAgentsAndReceivers kills. */
export function trackChild(child: ChildProcess): void {
  children.push(child);
}

/** Kills the agents a test started (SIGKILL) and takes its receivers down. */
export async function stopAgentsAndReceivers(): Promise<void> {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const r of receivers.splice(0)) await r.down();
}

/** @param prefix a command the agent runs under (`setpriv …` to drop a capability) */
export function startAgent(config: string, env: Record<string, string> = {}, prefix: string[] = []): AgentProcess {
  const [command, ...args] = [...prefix, process.execPath, CLI, 'agent', '-c', config];
  const child = spawn(command!, args, {
    env: { ...process.env, FERRY_ADMIN_TOKEN: ADMIN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const logs: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  let buf = '';
  let stderr = '';
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  // The log is on stderr, one JSON object a line (stderr is no terminal here); other lines are said as they are.
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line });
      }
      waiters.splice(0).forEach((w) => w());
    }
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    child,
    logs,
    exited,
    stderr: () => stderr,
    stdout: () => stdout,
    async waitLog(msg, ms = 15_000) {
      const end = Date.now() + ms;
      for (;;) {
        const hit = logs.find((l) => l.msg === msg);
        if (hit) return hit;
        if (child.exitCode !== null) throw new Error(`agent exited (${child.exitCode}) before "${msg}": ${stderr}`);
        if (Date.now() > end)
          throw new Error(`no "${msg}" in the agent's log: ${JSON.stringify(logs.slice(-5))} ${stderr}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 100);
        });
      }
    },
  };
}
