/**
 * The `console` and `file` sinks in a running agent: events on stdout as NDJSON and on stderr as readable
 * lines; files named by dataset and date, compressed, rotated by size, read back whole by zcat-like
 * readers; a kill -9 loses no line (a torn batch is only ever at the end of a file from the killed run);
 * a path that cannot be written shows in /health and the log and is retried, not dropped.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { decompress as zstdDecompress } from 'zstd-napi';
import { startAgent, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { freePort, tempDir, testSeed, until } from '../../../support/helpers.js';

afterEach(stopAgentsAndReceivers);

const today = () => new Date().toISOString().slice(0, 10);

/** The lines of every file in `dir` whose name starts with `prefix`, each file decoded as a reader would. */
function readParts(dir: string, prefix: string): { files: string[]; lines: string[] } {
  // In the order written: part 0 (no number), then 1, 2, … 10.
  const partOf = (f: string) => Number(/~(\d+)\.ndjson/.exec(f)?.[1] ?? 0);
  const files = readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .sort((a, b) => partOf(a) - partOf(b));
  const lines = files.flatMap((f) => {
    const raw = readFileSync(join(dir, f));
    const text = f.endsWith('.gz')
      ? gunzipSync(raw, { finishFlush: constants.Z_SYNC_FLUSH }).toString()
      : f.endsWith('.zst')
        ? zstdDecompress(raw).toString()
        : raw.toString();
    return text.split('\n').filter(Boolean);
  });
  return { files, lines };
}

describe('the console sink', () => {
  it('writes events to stdout as NDJSON and to stderr as readable lines', async () => {
    const dir = tempDir('ferry-console-');
    const log = join(dir, 'app.log');
    writeFileSync(
      log,
      [
        { _time: '2026-11-26T10:00:00Z', level: 'error', message: 'disk full\non /var', status: 500, path: '/a b' },
        { level: 'info', msg: 'ok', user: { id: 7 } },
      ]
        .map((e) => `${JSON.stringify(e)}\n`)
        .join(''),
    );
    writeFileSync(
      join(dir, 'agent.yaml'),
      `agent: { data_dir: ${join(dir, 'state')}, api: { enabled: false } }
service: { enabled: false }
sources: { file: { type: file, include: ["${log}"], start_at: beginning } }
transforms: { parse: { type: parse, inputs: [file], parser: json } }
sinks:
  raw: { type: console, inputs: [parse], batch: { timeout: 50ms } }
  readable: { type: console, inputs: [parse], format: text, target: stderr, batch: { timeout: 50ms } }
`,
    );
    const agent = startAgent(join(dir, 'agent.yaml'));
    const events = () =>
      agent
        .stdout()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as unknown);
    // On stderr, the agent's own log (JSON lines) and the readable console's lines.
    const readable = () =>
      agent
        .stderr()
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('{'))
        .map((l) => `${l}\n`)
        .join('');
    await until('both events on stdout', () => events().length === 2);
    await until('both events on stderr', () => readable().split('\n').length >= 3);
    expect(events()).toEqual([
      { _time: '2026-11-26T10:00:00Z', level: 'error', message: 'disk full\non /var', status: 500, path: '/a b' },
      { level: 'info', msg: 'ok', user: { id: 7 } },
    ]);
    expect(readable()).toBe(
      '2026-11-26T10:00:00Z ERROR disk full\\non /var status=500 path="/a b"\nINFO ok user={"id":7}\n',
    );
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });
});

describe('the file sink', () => {
  it("writes each dataset's batches to its own dated files, compressed, rotated by size", async () => {
    const dir = tempDir('ferry-filesink-');
    const port = await freePort();
    writeFileSync(
      join(dir, 'agent.yaml'),
      `agent: { data_dir: ${join(dir, 'state')}, api: { enabled: false } }
service: { enabled: false }
sources: { apps: { type: http, address: "127.0.0.1:${port}", tokens: [tk] } }
sinks:
  archive:
    type: file
    inputs: [apps]
    path: "${dir}/out/{{dataset}}-%Y-%m-%d.ndjson"
    compression: gzip
    max_bytes: 2KiB
    batch: { timeout: 20ms }
`,
    );
    const agent = startAgent(join(dir, 'agent.yaml'));
    await agent.waitLog('agent running');
    const post = (dataset: string, events: object[]) =>
      fetch(`http://127.0.0.1:${port}/v1/ingest/${dataset}`, {
        method: 'POST',
        headers: { authorization: 'Bearer tk', 'content-type': 'application/x-ndjson' },
        body: events.map((e) => JSON.stringify(e)).join('\n'),
      });
    const sent: Record<string, object[]> = { web: [], jobs: [] };
    for (let r = 0; r < 12; r++)
      for (const ds of ['web', 'jobs']) {
        const events = Array.from({ length: 20 }, (_, i) => ({ ds, r, i, pad: `${r}-${i}-${'x'.repeat(40)}` }));
        sent[ds]!.push(...events);
        expect((await post(ds, events)).status).toBe(200);
      }
    const total = () =>
      readParts(join(dir, 'out'), 'web-').lines.length + readParts(join(dir, 'out'), 'jobs-').lines.length;
    await until('every event in the files', () => total() === 480);
    for (const ds of ['web', 'jobs']) {
      const { files, lines } = readParts(join(dir, 'out'), `${ds}-`);
      expect(lines.map((l) => JSON.parse(l))).toEqual(sent[ds]);
      // Rotated by size: part 0 has the template's name, the next parts put their number before the extension.
      expect(files.length).toBeGreaterThan(1);
      expect(files).toContain(`${ds}-${today()}.ndjson.gz`);
      expect(files).toContain(`${ds}-${today()}~1.ndjson.gz`);
      for (const f of files) expect(statSync(join(dir, 'out', f)).size).toBeLessThanOrEqual(2048 + 1024);
    }
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);

    // Started again, it never appends to a file of the run before: it begins the next part.
    const again = startAgent(join(dir, 'agent.yaml'));
    await again.waitLog('agent running');
    const before = readdirSync(join(dir, 'out')).filter((f) => f.startsWith('web-'));
    expect((await post('web', [{ ds: 'web', late: true }])).status).toBe(200);
    await until('the late event', () => readParts(join(dir, 'out'), 'web-').lines.length === 241);
    const after = readdirSync(join(dir, 'out')).filter((f) => f.startsWith('web-'));
    expect(after.length).toBe(before.length + 1);
    expect(readParts(join(dir, 'out'), 'web-').lines.at(-1)).toBe('{"ds":"web","late":true}');
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });

  it('loses no line through kill -9 (seeded)', async () => {
    const { seed, rnd, replay } = testSeed(
      'FERRY_TEST_SEED',
      'npx vitest run test/integration/agent/sinks/console-file.test.ts',
    );
    const dir = tempDir('ferry-filesink-');
    const log = join(dir, 'app.log');
    writeFileSync(log, '');
    writeFileSync(
      join(dir, 'agent.yaml'),
      `agent: { data_dir: ${join(dir, 'state')}, api: { enabled: false } }
service: { enabled: false }
sources: { file: { type: file, include: ["${log}"], start_at: beginning } }
sinks:
  archive: { type: file, inputs: [file], path: "${dir}/out/app.ndjson", compression: gzip, max_bytes: 64KiB, batch: { timeout: 10ms, max_events: 50 } }
`,
    );
    let seq = 0;
    let agent = startAgent(join(dir, 'agent.yaml'));
    await agent.waitLog('agent running');
    for (let round = 0; round < 4; round++) {
      const n = 500 + Math.floor(rnd() * 1500);
      let out = '';
      for (let i = 0; i < n; i++)
        out += `${JSON.stringify({ seq: seq++, pad: 'y'.repeat(Math.floor(rnd() * 200)) })}\n`;
      appendFileSync(log, out);
      await new Promise((r) => setTimeout(r, 20 + rnd() * 300));
      agent.child.kill('SIGKILL');
      await agent.exited;
      agent = startAgent(join(dir, 'agent.yaml'));
      await agent.waitLog('agent running');
    }
    const seen = () => {
      const { lines } = readParts(join(dir, 'out'), 'app');
      const got = new Set<number>();
      for (const l of lines) {
        try {
          got.add((JSON.parse(l) as { seq: number }).seq);
        } catch {
          // A batch torn by the kill, at the end of a file of the killed run: written again, whole, later.
        }
      }
      return got;
    };
    await until(`every line (seed ${seed}; ${replay})`, () => seen().size === seq, 30_000);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    // Torn batches are only ever at a file's end: every file but its last line reads whole.
    const out = join(dir, 'out');
    for (const f of readdirSync(out)) {
      const lines = readParts(out, f).lines;
      for (const l of lines.slice(0, -1)) expect(() => JSON.parse(l), `${f} (seed ${seed})`).not.toThrow();
    }
  }, 90_000);

  it('says loudly when its path cannot be written, retries, and delivers once it can', async () => {
    const dir = tempDir('ferry-filesink-');
    const log = join(dir, 'app.log');
    writeFileSync(log, '{"n":1}\n');
    // The directory the files go into is a file: nothing can be created in it.
    writeFileSync(join(dir, 'out'), 'not a directory');
    writeFileSync(
      join(dir, 'agent.yaml'),
      `agent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }
service: { enabled: false }
sources: { file: { type: file, include: ["${log}"], start_at: beginning } }
sinks:
  archive: { type: file, inputs: [file], path: "${dir}/out/app.ndjson", batch: { timeout: 10ms }, retry: { initial_backoff: 50ms, max_backoff: 200ms } }
`,
    );
    const agent = startAgent(join(dir, 'agent.yaml'));
    const api = (await agent.waitLog('agent running')).api as string;
    const health = async () => (await (await fetch(`${api}/health`)).json()) as { status: string; sinks: object[] };
    let h = await health();
    const end = Date.now() + 10_000;
    while (h.status === 'ok' && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      h = await health();
    }
    expect(h.status).toBe('degraded');
    expect(h.sinks).toEqual([expect.objectContaining({ name: 'archive', state: 'retrying' })]);
    // The log says which path and why, at once.
    const warning = agent.logs.find((l) => l.sink === 'archive' && l.level === 'warn');
    expect(warning?.error).toBe(`sinks.archive.path: ${dir}/out/app.ndjson: a part of the path is not a directory`);
    // Fixed: the directory can be made, and the line is delivered.
    rmSync(join(dir, 'out'));
    // The sink's next attempt may make it first.
    mkdirSync(join(dir, 'out'), { recursive: true });
    await until('the line in the file', () => readParts(join(dir, 'out'), 'app').lines.length === 1);
    expect(readParts(join(dir, 'out'), 'app').lines).toEqual(['{"n":1}']);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });
});
