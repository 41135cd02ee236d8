import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { hostname } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStore } from '../src/service/store/event-store.js';
import { startTestService, tempDir, type TestService } from './helpers.js';

const CLI = 'dist/src/cli/main.js';

function ferryPipe(args: string[], input: string, env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'pipe', ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
    child.stdin.end(input);
  });
}

const lines = (n: number) => `${Array.from({ length: n }, (_, i) => JSON.stringify({ i, msg: `line ${i}` })).join('\n')}\nnot json at all\n`;

let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('app');
  token = await svc.apiToken();
});
afterAll(async () => svc?.stop());

describe('ferry pipe', () => {
  it('ships to an https endpoint (a private CA trusted through NODE_EXTRA_CA_CERTS)', async () => {
    // A self-signed certificate for 127.0.0.1, made once for these tests (test/fixtures/tls).
    const tls = new URL('./fixtures/tls/', import.meta.url);
    const received: string[] = [];
    const server = createHttpsServer({ key: readFileSync(new URL('key.pem', tls)), cert: readFileSync(new URL('cert.pem', tls)) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const lines = gunzipSync(Buffer.concat(chunks)).toString().split('\n').filter(Boolean);
        received.push(...lines);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ingested: lines.length, failed: 0, failures: [], processedBytes: 0, blocksCreated: 0, walLength: 0 }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      const r = await ferryPipe(['--dataset', 'app', '--url', url, '--token', 'xaat-tls'], lines(300), { NODE_EXTRA_CA_CERTS: new URL('cert.pem', tls).pathname });
      expect(r).toMatchObject({ code: 0 });
      expect(received).toHaveLength(301);
    } finally {
      server.close();
    }
  });

  it('ships stdin to the service and exits 0 once every line is acknowledged', async () => {
    const r = await ferryPipe(['--dataset', 'app', '--url', svc.url, '--token', token], lines(25_000));
    expect(r).toMatchObject({ code: 0 });
    expect(r.stderr).toContain('25001 line(s) delivered to app');
    expect(await svc.store.count('app')).toBe(25_001);
    const events = await svc.store.readEvents('app', { limit: 100_000, order: 'asc' });
    expect(events.filter((e) => e.message === 'not json at all')).toHaveLength(1);
    expect(new Set(events.map((e) => e.i).filter((i) => i !== undefined)).size).toBe(25_000);
  });

  it('parses with the chosen parser', async () => {
    await svc.createDataset('kv');
    const r = await ferryPipe(['-d', 'kv', '-p', 'logfmt'], 'level=warn msg="disk low" pct=91\n', { FERRY_URL: svc.url, FERRY_TOKEN: token });
    expect(r.code).toBe(0);
    const [e] = await svc.store.readEvents('kv');
    expect(e).toMatchObject({ level: 'warn', msg: 'disk low', pct: '91' });
  });

  it('takes the time from a field in a given format and adds labels and the host, remote and local', async () => {
    await svc.createDataset('timed');
    const input = `${JSON.stringify({ ts: 1700000000123, msg: 'a' })}\n`;
    const r = await ferryPipe(['-d', 'timed', '--url', svc.url, '--token', token, '--timestamp-field', 'ts', '--timestamp-format', 'unixms', '-l', 'env=prod', '-l', 'team=core', '--add-host'], input);
    expect(r.code).toBe(0);
    const [e] = await svc.store.readEvents('timed');
    expect(e).toMatchObject({ _time: '2023-11-14T22:13:20.123Z', msg: 'a', env: 'prod', team: 'core', host: hostname() });

    const dir = tempDir('ferry-pipe-local-');
    const local = await ferryPipe(['-d', 'timed', '--local', '--data-dir', dir, '--timestamp-field', 'ts', '--timestamp-format', 'unixms', '-l', 'env=dev'], input);
    expect(local.code).toBe(0);
    const store = await EventStore.open({ dataDir: dir, memoryLimitBytes: 256 << 20, maxFieldsPerDataset: 2048, defaultRetentionDays: 0, maxObjectBytes: 1 << 24 });
    try {
      expect((await store.readEvents('timed'))[0]).toMatchObject({ _time: '2023-11-14T22:13:20.123Z', env: 'dev' });
    } finally {
      await store.close();
    }
  });

  it('joins multiline stack traces before parsing', async () => {
    await svc.createDataset('traces');
    const input = ['start', 'java.lang.RuntimeException: x', '\tat a.B.c(B.java:1)', '\tat a.B.d(B.java:2)', 'end', ''].join('\n');
    const r = await ferryPipe(['-d', 'traces', '-p', 'plain', '--multiline', 'java', '--url', svc.url, '--token', token], input);
    expect(r.code).toBe(0);
    const messages = (await svc.store.readEvents('traces', { order: 'asc' })).map((e) => e.message);
    expect(messages).toEqual(['start', 'java.lang.RuntimeException: x\n\tat a.B.c(B.java:1)\n\tat a.B.d(B.java:2)', 'end']);
  });

  it('exits non-zero saying why: refused events, an unreachable receiver, bad arguments', async () => {
    const dead = `${tempDir()}/dead.ndjson`;
    const refused = await ferryPipe(['--dataset', 'app', '--url', svc.url, '--token', 'xaat-wrong', '--dead-letter', dead], lines(3));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`4 event(s) were refused by the receiver; they are in ${dead}`);
    const down = await ferryPipe(['--dataset', 'app', '--url', 'http://127.0.0.1:9', '--token', token, '--max-attempts', '2'], lines(3));
    expect(down.code).not.toBe(0);
    expect(down.stderr).toMatch(/giving up after 2 attempts/);
    const noDataset = await ferryPipe(['--url', svc.url, '--token', token], 'x\n');
    expect(noDataset.stderr).toContain('pipe needs --dataset NAME');
  });

  it('--local writes into a store on disk, creating the dataset', async () => {
    const dir = tempDir('ferry-pipe-local-');
    const r = await ferryPipe(['--dataset', 'offline', '--local', '--data-dir', dir], lines(1000));
    expect(r.code).toBe(0);
    const store = await EventStore.open({ dataDir: dir, memoryLimitBytes: 256 << 20, maxFieldsPerDataset: 2048, defaultRetentionDays: 0, maxObjectBytes: 1 << 24 });
    try {
      expect(await store.count('offline')).toBe(1001);
    } finally {
      await store.close();
    }
  });
});
