import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { hostname } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { decompress as zstdDecompress } from 'zstd-napi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStore } from '../../../src/service/store/event-store.js';
import { startTestService, tempDir, type TestService } from '../../support/helpers.js';

const CLI = 'dist/src/cli/main.js';

function ferryPipe(
  args: string[],
  input: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'pipe', ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
    child.stdin.end(input);
  });
}

const lines = (n: number) =>
  `${Array.from({ length: n }, (_, i) => JSON.stringify({ i, msg: `line ${i}` })).join('\n')}\nnot json at all\n`;

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
    // A self-signed certificate for 127.0.0.1, made once for these tests (test/support/fixtures/tls).
    const tls = new URL('../../support/fixtures/tls/', import.meta.url);
    const received: string[] = [];
    const encodings: string[] = [];
    const server = createHttpsServer(
      { key: readFileSync(new URL('key.pem', tls)), cert: readFileSync(new URL('cert.pem', tls)) },
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          // zstd by default, as the axiom sink sends it.
          encodings.push(String(req.headers['content-encoding']));
          const raw = Buffer.concat(chunks);
          const body = req.headers['content-encoding'] === 'zstd' ? zstdDecompress(raw) : gunzipSync(raw);
          const lines = body.toString().split('\n').filter(Boolean);
          received.push(...lines);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              ingested: lines.length,
              failed: 0,
              failures: [],
              processedBytes: 0,
              blocksCreated: 0,
              walLength: 0,
            }),
          );
        });
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      const r = await ferryPipe(['--dataset', 'app', '--url', url, '--token', 'xaat-tls'], lines(300), {
        NODE_EXTRA_CA_CERTS: new URL('cert.pem', tls).pathname,
      });
      expect(r).toMatchObject({ code: 0 });
      expect(received).toHaveLength(301);
      expect(new Set(encodings)).toEqual(new Set(['zstd']));
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
    const r = await ferryPipe(['-d', 'kv', '-p', 'logfmt'], 'level=warn msg="disk low" pct=91\n', {
      FERRY_URL: svc.url,
      FERRY_TOKEN: token,
    });
    expect(r.code).toBe(0);
    const [e] = await svc.store.readEvents('kv');
    expect(e).toMatchObject({ level: 'warn', msg: 'disk low', pct: '91' });
  });

  it('takes the time from a field in a given format and adds labels and the host, remote and local', async () => {
    await svc.createDataset('timed');
    const input = `${JSON.stringify({ ts: 1700000000123, msg: 'a' })}\n`;
    const r = await ferryPipe(
      [
        '-d',
        'timed',
        '--url',
        svc.url,
        '--token',
        token,
        '--timestamp-field',
        'ts',
        '--timestamp-format',
        'unixms',
        '-l',
        'env=prod',
        '-l',
        'team=core',
        '--add-host',
      ],
      input,
    );
    expect(r.code).toBe(0);
    const [e] = await svc.store.readEvents('timed');
    expect(e).toMatchObject({
      _time: '2023-11-14T22:13:20.123Z',
      msg: 'a',
      env: 'prod',
      team: 'core',
      host: hostname(),
    });

    const dir = tempDir('ferry-pipe-local-');
    const local = await ferryPipe(
      [
        '-d',
        'timed',
        '--local',
        '--data-dir',
        dir,
        '--timestamp-field',
        'ts',
        '--timestamp-format',
        'unixms',
        '-l',
        'env=dev',
      ],
      input,
    );
    expect(local.code).toBe(0);
    const store = await EventStore.open({
      dataDir: dir,
      memoryLimitBytes: 256 << 20,
      maxFieldsPerDataset: 2048,
      defaultRetentionDays: 0,
      maxObjectBytes: 1 << 24,
    });
    try {
      expect((await store.readEvents('timed'))[0]).toMatchObject({ _time: '2023-11-14T22:13:20.123Z', env: 'dev' });
    } finally {
      await store.close();
    }
  });

  it('joins multiline stack traces before parsing', async () => {
    await svc.createDataset('traces');
    const input = [
      'start',
      'java.lang.RuntimeException: x',
      '\tat a.B.c(B.java:1)',
      '\tat a.B.d(B.java:2)',
      'end',
      '',
    ].join('\n');
    const r = await ferryPipe(
      ['-d', 'traces', '-p', 'plain', '--multiline', 'java', '--url', svc.url, '--token', token],
      input,
    );
    expect(r.code).toBe(0);
    const messages = (await svc.store.readEvents('traces', { order: 'asc' })).map((e) => e.message);
    expect(messages).toEqual([
      'start',
      'java.lang.RuntimeException: x\n\tat a.B.c(B.java:1)\n\tat a.B.d(B.java:2)',
      'end',
    ]);
  });

  it('exits 1 saying why, with the status and reason, and keeps what was not delivered in the dead-letter file', async () => {
    const dead = `${tempDir()}/dead.ndjson`;
    const refused = await ferryPipe(
      ['--dataset', 'app', '--url', svc.url, '--token', 'xaat-wrong', '--dead-letter', dead],
      lines(3),
    );
    expect(refused.code).toBe(1);
    // One line says it: how many, why, and where they are kept.
    expect(refused.stderr).toMatch(
      new RegExp(`^ferry pipe: 4 event\\(s\\) refused: 401 Unauthorized: [^;\n]+; kept in ${dead}\n$`),
    );
    const kept = readFileSync(dead, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { status: number; event: unknown });
    expect(kept.map((k) => k.event)).toEqual([
      { i: 0, msg: 'line 0' },
      { i: 1, msg: 'line 1' },
      { i: 2, msg: 'line 2' },
      { message: 'not json at all' },
    ]);
    expect(kept.every((k) => k.status === 401)).toBe(true);

    const dead2 = `${tempDir()}/dead.ndjson`;
    const down = await ferryPipe(
      [
        '--dataset',
        'app',
        '--url',
        'http://127.0.0.1:9',
        '--token',
        token,
        '--max-attempts',
        '2',
        '--dead-letter',
        dead2,
      ],
      lines(3),
    );
    expect(down.code).toBe(1);
    // The first failure is said at once, with the attempt count.
    expect(down.stderr).toMatch(
      /^ferry pipe: receiver unreachable: connect ECONNREFUSED 127\.0\.0\.1:9, retrying \(1\/2\)$/m,
    );
    expect(down.stderr).toMatch(
      new RegExp(
        `4 event\\(s\\) not delivered: giving up after 2 attempts: connect ECONNREFUSED 127\\.0\\.0\\.1:9; kept in ${dead2}$`,
        'm',
      ),
    );
    expect(readFileSync(dead2, 'utf8').trim().split('\n')).toHaveLength(4);

    // https:// to a port that speaks plain HTTP: said in words, at once, not retried.
    const dead3 = `${tempDir()}/dead.ndjson`;
    const tls = await ferryPipe(
      ['--dataset', 'app', '--url', svc.url.replace('http://', 'https://'), '--token', token, '--dead-letter', dead3],
      lines(1),
    );
    expect(tls.code).toBe(1);
    expect(tls.stderr).toBe(
      `ferry pipe: 2 event(s) not delivered: sink pipe: ${svc.url.replace('http://', 'https://')}: the server does not speak TLS (use http://); kept in ${dead3}\n`,
    );
    const ingestUrl = await ferryPipe(['-d', 'app', '--url', `${svc.url}/v1/ingest/app`, '--token', token], 'x\n');
    expect(ingestUrl).toMatchObject({
      code: 2,
      stderr: `ferry: --url: "${svc.url}/v1/ingest/app" is the API root (e.g. ${svc.url}), without /v1/ingest/app: the dataset is set apart\n`,
    });

    const noDataset = await ferryPipe(['--url', svc.url, '--token', token], 'x\n');
    expect(noDataset).toMatchObject({ code: 2, stderr: 'ferry: pipe needs --dataset NAME\n' });
    const badToken = await ferryPipe(['-d', 'app', '--url', svc.url, '--token', `${token}\r`], 'x\n');
    expect(badToken.code).toBe(2);
    expect(badToken.stderr).toMatch(/^ferry: --token: contains \\r at character \d+; a token is printable ASCII/);
  });

  it('on SIGINT delivers what was read and says how many events were and were not delivered', async () => {
    await svc.createDataset('interrupted');
    // The signal is sent once the run is under way (its events delivered, or its first attempt said to have
    // failed), not after a fixed wait a loaded machine may outlast.
    const run = async (url: string, underWay: (stderr: string) => Promise<boolean>) => {
      const dead = `${tempDir()}/dead.ndjson`;
      const child = spawn(
        process.execPath,
        [
          CLI,
          'pipe',
          '-d',
          'interrupted',
          '--url',
          url,
          '--token',
          token,
          '--dead-letter',
          dead,
          '--shutdown-timeout',
          '2s',
        ],
        { stdio: ['pipe', 'ignore', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      child.stdin.write(lines(99)); // the input stays open: only the signal ends the run
      for (const end = Date.now() + 20_000; !(await underWay(stderr));) {
        if (Date.now() > end) throw new Error(`ferry pipe never got under way: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      child.kill('SIGINT');
      return { code: await exited, stderr, dead };
    };
    const up = await run(svc.url, async () => (await svc.store.count('interrupted')) === 100);
    expect(up.stderr).toContain('ferry pipe: interrupted: 100 event(s) delivered, 0 not delivered');
    expect(up.code).toBe(0);
    expect(await svc.store.count('interrupted')).toBe(100);
    const down = await run('http://127.0.0.1:9', async (stderr) => stderr.includes('ferry pipe:'));
    expect(down.code).toBe(1);
    expect(down.stderr).toContain(
      `ferry pipe: interrupted: 0 event(s) delivered, 100 not delivered (kept in ${down.dead})`,
    );
    expect(readFileSync(down.dead, 'utf8').trim().split('\n')).toHaveLength(100);
  });

  it('--local writes into a store on disk, creating the dataset', async () => {
    const dir = tempDir('ferry-pipe-local-');
    const r = await ferryPipe(['--dataset', 'offline', '--local', '--data-dir', dir], lines(1000));
    expect(r.code).toBe(0);
    const store = await EventStore.open({
      dataDir: dir,
      memoryLimitBytes: 256 << 20,
      maxFieldsPerDataset: 2048,
      defaultRetentionDays: 0,
      maxObjectBytes: 1 << 24,
    });
    try {
      expect(await store.count('offline')).toBe(1001);
    } finally {
      await store.close();
    }
  });
});
