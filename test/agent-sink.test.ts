import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { AxiomSink } from '../src/agent/sinks/axiom.js';
import { DeadLetterFile } from '../src/agent/sinks/dead-letter.js';
import { ndjson } from '../src/agent/sinks/sink.js';
import { backoffMs, requestedWaitMs } from '../src/agent/sinks/retry.js';
import { ADMIN, startTestService, tempDir } from './helpers.js';

type Handler = (req: IncomingMessage, body: string[], res: ServerResponse) => void;

/** A receiver on a random loopback port that answers as the test scripts it. */
async function receiver(handler: Handler): Promise<{ url: string; requests: { lines: string[]; auth?: string }[]; close(): Promise<void> }> {
  const requests: { lines: string[]; auth?: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const text = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw).toString() : raw.toString();
      const lines = text.split('\n').filter(Boolean);
      requests.push({ lines, auth: req.headers.authorization });
      handler(req, lines, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
}

const ok = (res: ServerResponse, n: number, failures: unknown[] = []) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ingested: n - failures.length, failed: failures.length, failures, processedBytes: 0, blocksCreated: 0, walLength: 0 }));
};

const events = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ i }));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function sink(url: string, extra: Partial<ConstructorParameters<typeof AxiomSink>[0]> = {}) {
  const dir = tempDir('ferry-sink-');
  const deadLetter = new DeadLetterFile(join(dir, 'dead-letter.ndjson'));
  const s = new AxiomSink({ name: 'out', url, dataset: 'logs', token: 'xaat-test', deadLetter, backoff: { initialMs: 5, maxMs: 50 }, ...extra });
  cleanups.push(() => s.close());
  return { s, deadLetter };
}

describe('retry timing', () => {
  it('backs off exponentially with full jitter, up to the cap', () => {
    expect(backoffMs(1, { initialMs: 100, maxMs: 1000 }, () => 0.999)).toBe(99);
    expect(backoffMs(4, { initialMs: 100, maxMs: 1000 }, () => 0.999)).toBe(799);
    expect(backoffMs(30, { initialMs: 100, maxMs: 1000 }, () => 0.999)).toBe(999);
    expect(backoffMs(3, { initialMs: 100, maxMs: 1000 }, () => 0)).toBe(0);
  });
  it('honours Retry-After (seconds or date) and X-RateLimit-Reset', () => {
    const now = Date.parse('2024-01-01T00:00:00Z');
    expect(requestedWaitMs({ 'retry-after': '2' }, now)).toBe(2000);
    expect(requestedWaitMs({ 'retry-after': 'Mon, 01 Jan 2024 00:00:05 GMT' }, now)).toBe(5000);
    expect(requestedWaitMs({ 'x-ratelimit-reset': String(now / 1000 + 3) }, now)).toBe(3000);
    expect(requestedWaitMs({}, now)).toBeUndefined();
  });
});

describe('axiom sink', () => {
  it('posts gzip NDJSON with the token, and retries 429 (Retry-After), 500 and dropped connections until delivered', async () => {
    let n = 0;
    const r = await receiver((_req, lines, res) => {
      n++;
      if (n === 1) {
        res.writeHead(429, { 'retry-after': '0.05', 'content-type': 'application/json' });
        res.end('{"message":"rate limit exceeded"}');
      } else if (n === 2) {
        res.writeHead(500);
        res.end('oops');
      } else if (n === 3) res.socket?.destroy();
      else ok(res, lines.length);
    });
    cleanups.push(r.close);
    const { s } = sink(r.url);
    await s.send(ndjson(events(3)));
    expect(r.requests).toHaveLength(4);
    expect(r.requests[3]).toEqual({ lines: events(3), auth: 'Bearer xaat-test' });
    expect(s.counters).toMatchObject({ eventsOut: 3, retries: 3, deadLettered: 0 });
  });

  it('splits a batch the receiver finds too large (413) until it fits; a single oversized event is dead-lettered', async () => {
    const r = await receiver((_req, lines, res) => {
      if (lines.some((l) => l.includes('"big"'))) {
        if (lines.length > 1) {
          res.writeHead(413);
          res.end();
          return;
        }
        res.writeHead(413);
        res.end('{"message":"too large"}');
        return;
      }
      if (lines.length > 2) {
        res.writeHead(413);
        res.end();
      } else ok(res, lines.length);
    });
    cleanups.push(r.close);
    const { s, deadLetter } = sink(r.url);
    await s.send(ndjson([...events(5), JSON.stringify({ big: 'x' })]));
    const delivered = r.requests.filter((q) => q.lines.length <= 2 && !q.lines.some((l) => l.includes('big'))).flatMap((q) => q.lines);
    expect(delivered.sort()).toEqual(events(5).sort());
    const dead = readFileSync(deadLetter.path, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(dead).toEqual([{ time: expect.any(String), sink: 'out', status: 413, error: 'the receiver refused this event as too large (413)', event: { big: 'x' } }]);
  });

  it('dead-letters a batch refused with another 4xx, and the failures of a 200, with status and error', async () => {
    const r = await receiver((req, lines, res) => {
      if (lines[0]!.includes('"bad"')) {
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end('{"code":403,"message":"Forbidden: no ingest capability"}');
      } else ok(res, lines.length, [{ timestamp: 'now', error: 'event 2: invalid JSON' }]);
      void req;
    });
    cleanups.push(r.close);
    const { s, deadLetter } = sink(r.url);
    await s.send(ndjson([JSON.stringify({ bad: 1 })]));
    await s.send(ndjson(events(3)));
    const dead = readFileSync(deadLetter.path, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(dead).toEqual([
      { time: expect.any(String), sink: 'out', status: 403, error: 'Forbidden: no ingest capability', event: { bad: 1 } },
      { time: expect.any(String), sink: 'out', status: 200, error: 'event 2: invalid JSON' },
    ]);
    expect(s.counters).toMatchObject({ eventsOut: 3, deadLettered: 2 });
  });

  it('delivers into Ferry\'s own service, and closing stops a retry loop without losing the batch', async () => {
    const svc = await startTestService();
    cleanups.push(() => svc.stop());
    await svc.createDataset('logs');
    const token = await svc.apiToken();
    const { s } = sink(svc.url, { token });
    await s.send(ndjson(events(10)));
    expect(await svc.store.count('logs')).toBe(10);

    const down = sink('http://127.0.0.1:1', { token: ADMIN }).s;
    const pending = down.send(ndjson(events(1)));
    await new Promise((res) => setTimeout(res, 50));
    await down.close();
    await expect(pending).rejects.toThrow(/closed while delivering/);
  });
});
