import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { compress as zstdCompress, decompress as zstdDecompress } from 'zstd-napi';
import { afterEach, describe, expect, it } from 'vitest';
import { Batcher, STAGE_BYTES } from '../../../../src/agent/delivery/batcher.js';
import { AxiomSink, type AxiomSinkOptions } from '../../../../src/agent/sinks/axiom.js';
import { SendChain, type SendChainOptions } from '../../../../src/agent/delivery/send-chain.js';
import { DeadLetterFile } from '../../../../src/agent/delivery/dead-letter.js';
import { decode, encode, recordEncoding } from '../../../../src/agent/delivery/encoding.js';
import { LocalSink } from '../../../../src/agent/sinks/local.js';
import { ndjson } from '../../../../src/agent/delivery/batch.js';
import { SinkHealth } from '../../../../src/agent/delivery/sink-health.js';
import { backoffMs, requestedWaitMs } from '../../../../src/util/retry.js';
import { ADMIN, startTestService, tempDir } from '../../../support/helpers.js';

type Handler = (req: IncomingMessage, body: string[], res: ServerResponse) => void;

/** A receiver on a random loopback port that answers as the test scripts it. */
async function receiver(
  handler: Handler,
): Promise<{ url: string; requests: { lines: string[]; auth?: string; encoding?: string }[]; close(): Promise<void> }> {
  const requests: { lines: string[]; auth?: string; encoding?: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const encoding = req.headers['content-encoding'];
      const text = (encoding === 'gzip' ? gunzipSync(raw) : encoding === 'zstd' ? zstdDecompress(raw) : raw).toString();
      const lines = text.split('\n').filter(Boolean);
      requests.push({ lines, auth: req.headers.authorization, ...(encoding ? { encoding } : {}) });
      handler(req, lines, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
}

const ok = (res: ServerResponse, n: number, failures: unknown[] = []) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      ingested: n - failures.length,
      failed: failures.length,
      failures,
      processedBytes: 0,
      blocksCreated: 0,
      walLength: 0,
    }),
  );
};

const events = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ i }));

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** The axiom sink in the send chain every sink is delivered through, as the pipeline builds it. */
function sink(url: string, extra: Partial<AxiomSinkOptions & SendChainOptions> = {}) {
  const dir = tempDir('ferry-sink-');
  const deadLetter = new DeadLetterFile(join(dir, 'dead-letter.ndjson'));
  const { health, maxAttempts, refusal, ...axiom } = extra;
  const s = new SendChain(new AxiomSink({ name: 'out', url, dataset: 'logs', token: 'xaat-test', ...axiom }), {
    name: 'out',
    deadLetter,
    backoff: { initialMs: 5, maxMs: 50 },
    health,
    maxAttempts,
    refusal,
  });
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
  it('posts zstd NDJSON (the default) with the token, and retries 429 (Retry-After), 500 and dropped connections until delivered', async () => {
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
    await s.send(ndjson(events(3)), 'none');
    expect(r.requests).toHaveLength(4);
    expect(r.requests[3]).toEqual({ lines: events(3), auth: 'Bearer xaat-test', encoding: 'zstd' });
    expect(s.counters).toMatchObject({ eventsOut: 3, retries: 3, deadLettered: 0 });
  });

  it('gives up on a silent receiver after the timeout and tries again; posts share kept-alive connections', async () => {
    let n = 0;
    const connections = new Set<unknown>();
    const r = await receiver((req, lines, res) => {
      connections.add(req.socket);
      if (++n === 1) return; // never answers
      ok(res, lines.length);
    });
    cleanups.push(r.close);
    const { s } = sink(r.url, { timeoutMs: 300 });
    await s.send(ndjson(events(2)), 'none');
    await s.send(ndjson(events(3)), 'none');
    await s.send(ndjson(events(4)), 'none');
    expect(r.requests.map((q) => q.lines.length)).toEqual([2, 2, 3, 4]);
    expect(s.counters).toMatchObject({ eventsOut: 9, retries: 1 });
    // The silent connection was dropped; the three posts after it went over one connection.
    expect(connections.size).toBe(2);
  });

  it('sends a batch as it was queued: compressed once before the queue, or compressed on the way if queued as NDJSON', async () => {
    const r = await receiver((_req, lines, res) => ok(res, lines.length));
    cleanups.push(r.close);
    const gz = sink(r.url, { compression: 'gzip' }).s;
    const zs = sink(r.url).s; // zstd unless told otherwise
    expect([gz.encoding, zs.encoding]).toEqual(['gzip', 'zstd']);
    const queued = await encode(ndjson(events(3)), 'gzip');
    // A record queued before records said their encoding is known by its magic number.
    expect(recordEncoding(0, queued)).toBe('gzip');
    expect(recordEncoding(0, ndjson(events(1)))).toBe('none');
    expect(decode(queued, 'gzip').toString()).toBe(events(3).join('\n'));
    await gz.send(queued, 'gzip');
    await gz.send(ndjson(events(2)), 'none'); // queued before compression moved in front of the queue
    await gz.send(zstdCompress(ndjson(events(1))), 'zstd'); // queued while the sink was configured for zstd
    await zs.send(await encode(ndjson(events(2)), 'zstd'), 'zstd');
    expect(r.requests.map((q) => [q.encoding, q.lines.length])).toEqual([
      ['gzip', 3],
      ['gzip', 2],
      ['zstd', 1],
      ['zstd', 2],
    ]);
    expect(gz.counters).toMatchObject({ eventsOut: 6, deadLettered: 0 });
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
    await s.send(ndjson([...events(5), JSON.stringify({ big: 'x' })]), 'none');
    const delivered = r.requests
      .filter((q) => q.lines.length <= 2 && !q.lines.some((l) => l.includes('big')))
      .flatMap((q) => q.lines);
    expect(delivered.sort()).toEqual(events(5).sort());
    const dead = readFileSync(deadLetter.path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(dead).toEqual([
      {
        time: expect.any(String),
        sink: 'out',
        status: 413,
        error: '413 Payload Too Large: the receiver refused this event as too large',
        event: { big: 'x' },
      },
    ]);
  });

  it('dead-letters a batch refused with a 4xx other than 401/403/404, and the failures of a 200, with status and error', async () => {
    const r = await receiver((req, lines, res) => {
      if (lines[0]!.includes('"bad"')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end('{"code":400,"message":"invalid timestamp format"}');
      } else ok(res, lines.length, [{ timestamp: 'now', error: 'event 2: invalid JSON' }]);
      void req;
    });
    cleanups.push(r.close);
    const reports: string[] = [];
    const { s, deadLetter } = sink(r.url, {
      health: new SinkHealth('out', (level, msg) => reports.push(`${level} ${msg}`)),
    });
    await s.send(ndjson([JSON.stringify({ bad: 1 })]), 'none');
    await s.send(ndjson(events(3)), 'none');
    // Each time, with the count and the first reason.
    expect(reports).toEqual([
      `warn 1 event(s) refused by the receiver and written to ${deadLetter.path}: 400 Bad Request: invalid timestamp format`,
      `warn 1 event(s) refused by the receiver and written to ${deadLetter.path}: failed at ingest: event 2: invalid JSON`,
    ]);
    const dead = readFileSync(deadLetter.path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(dead).toEqual([
      {
        time: expect.any(String),
        sink: 'out',
        status: 400,
        error: '400 Bad Request: invalid timestamp format',
        event: { bad: 1 },
      },
      { time: expect.any(String), sink: 'out', status: 200, error: 'event 2: invalid JSON' },
    ]);
    expect(s.counters).toMatchObject({ eventsOut: 3, deadLettered: 2 });
  });

  it('holds the batch on 401, 403 and 404 (no dead letter), says so at once and then at most once per period, and delivers once the receiver accepts', async () => {
    for (const status of [401, 403, 404]) {
      let refuse = 4;
      const r = await receiver((_req, lines, res) => {
        if (refuse-- > 0) {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              code: status,
              message: status === 404 ? 'dataset logs not found' : 'invalid or expired token',
            }),
          );
        } else ok(res, lines.length);
      });
      cleanups.push(r.close);
      const reports: { level: string; msg: string }[] = [];
      let clock = 1_000_000;
      const health = new SinkHealth(
        'out',
        (level, msg) => reports.push({ level, msg }),
        60_000,
        () => clock,
      );
      const { s, deadLetter } = sink(r.url, { health });
      const sending = s.send(ndjson(events(2)), 'none');
      await until(() => r.requests.length >= 2);
      expect(health.state).toBe('refused');
      expect(health.lastError).toMatch(new RegExp(`^refused: ${status} ${STATUS_CODES[status]}: `));
      clock += 61_000; // a minute later the next failure is summarised once more
      await sending;
      expect(r.requests).toHaveLength(5);
      expect(existsSync(deadLetter.path)).toBe(false);
      expect(s.counters).toMatchObject({ eventsOut: 2, deadLettered: 0, retries: 4 });
      expect(health.state).toBe('ok');
      const errors = reports.filter((x) => x.level === 'error').map((x) => x.msg);
      expect(errors[0]).toContain(`refused: ${status} ${STATUS_CODES[status]}`);
      expect(errors[0]).toContain('the queue is held');
      expect(errors.length).toBeLessThanOrEqual(2); // the first, and one summary after the minute passed
      expect(reports.at(-1)).toMatchObject({
        level: 'info',
        msg: expect.stringMatching(/^delivering again after \d+s \(4 failed attempts\)$/),
      });
    }
  });

  it('dead-letters, rather than holds, a batch whose dataset an application named and the receiver refuses (403, 404)', async () => {
    for (const status of [403, 404]) {
      const r = await receiver((req, lines, res) => {
        if (req.url!.includes('/typo')) {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ code: status, message: 'dataset typo not found' }));
        } else ok(res, lines.length);
      });
      cleanups.push(r.close);
      const { s, deadLetter } = sink(r.url);
      // A relayed request's dataset (it comes with params): the operator cannot fix it, others must not wait.
      await s.send(ndjson(events(2)), 'none', { dataset: 'typo', params: {} });
      await s.send(ndjson(events(3)), 'none', { dataset: 'good', params: {} });
      expect(r.requests.map((q) => q.lines.length)).toEqual([2, 3]);
      const dead = readFileSync(deadLetter.path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(dead).toHaveLength(2);
      expect(dead[0]).toMatchObject({ dataset: 'typo', status, event: { i: 0 } });
    }
  });

  it('sends labels with any characters in X-Axiom-Event-Labels, escaped to ASCII', async () => {
    const seen: string[] = [];
    const r = await receiver((req, lines, res) => {
      seen.push(String(req.headers['x-axiom-event-labels']));
      ok(res, lines.length);
    });
    cleanups.push(r.close);
    const { s } = sink(r.url, { labels: { host: 'wëb-1' } });
    await s.send(ndjson(events(1)), 'none', { dataset: 'app', params: { labels: { city: '中文 ✓', crlf: 'a\r\nb' } } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatch(/^[\x20-\x7e]+$/);
    expect(JSON.parse(seen[0]!)).toEqual({ host: 'wëb-1', city: '中文 ✓', crlf: 'a\r\nb' });
  });

  it('says at once that the receiver is unreachable, and keeps lastError from the first failure', async () => {
    const reports: string[] = [];
    const health = new SinkHealth('out', (level, msg) => reports.push(`${level} ${msg}`));
    const { s } = sink('http://127.0.0.1:9', { health, maxAttempts: 3 });
    await expect(s.send(ndjson(events(1)), 'none')).rejects.toThrow(
      /giving up after 3 attempts: connect ECONNREFUSED 127\.0\.0\.1:9/,
    );
    expect(reports[0]).toBe('warn receiver unreachable: connect ECONNREFUSED 127.0.0.1:9, retrying (1/3)');
    expect(reports).toHaveLength(1); // the second failure is within the minute: no second line
    expect(health).toMatchObject({
      state: 'retrying',
      failures: 2,
      lastError: 'receiver unreachable: connect ECONNREFUSED 127.0.0.1:9',
    });
  });

  it('fails at once, without retrying, when the request cannot be sent (a token with a control character)', async () => {
    const r = await receiver((_req, lines, res) => ok(res, lines.length));
    cleanups.push(r.close);
    const { s } = sink(r.url, { token: 'xaat-test\r' });
    const started = Date.now();
    await expect(s.send(ndjson(events(1)), 'none')).rejects.toThrow(
      /cannot be sent .*Invalid character in header content \["authorization"\]\); check the sink's url and token/,
    );
    expect(s.counters.retries).toBe(0);
    expect(r.requests).toHaveLength(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("delivers batches compressed in stages (several gzip members or zstd frames) into Ferry's own service", async () => {
    const svc = await startTestService();
    cleanups.push(() => svc.stop());
    await svc.createDataset('staged');
    const token = await svc.apiToken();
    for (const compression of ['gzip', 'zstd'] as const) {
      const { s } = sink(svc.url, { token, dataset: 'staged', compression });
      const bodies: Buffer[] = [];
      const batcher = new Batcher(
        { maxEvents: 1_000_000, maxBytes: 16 * STAGE_BYTES, timeoutMs: 10_000 },
        async (parts) => {
          expect(parts.length).toBeGreaterThan(1);
          bodies.push(Buffer.concat(parts));
        },
        (part) => encode(part, compression),
      );
      for (let i = 0; i < 6000; i++)
        await batcher.add(JSON.stringify({ i, compression, pad: 'p'.repeat(300 + (i % 100)) }));
      await batcher.flush();
      expect(bodies).toHaveLength(1);
      await s.send(bodies[0]!, compression);
      expect(s.counters.eventsOut).toBe(6000);
    }
    expect(await svc.store.count('staged')).toBe(12_000);
  });

  /** A service with a dataset `logs`, and a local sink's chain into it that dead-letters into `dir`. */
  async function localChain(overrides: Parameters<typeof startTestService>[0] = {}) {
    const svc = await startTestService(overrides);
    cleanups.push(() => svc.stop());
    await svc.createDataset('logs');
    const dir = tempDir('ferry-sink-');
    const local = new SendChain(new LocalSink(svc.store, 'logs'), {
      name: 'here',
      deadLetter: new DeadLetterFile(join(dir, 'dead-letter.ndjson')),
    });
    return { svc, dir, local };
  }

  it('writes a batch of events with their own dataset into that dataset, making it, and refuses a name the store refuses', async () => {
    const { svc, dir, local } = await localChain();
    // Batches in flight at once that bring the same new dataset: one makes it, none is refused.
    await Promise.all([1, 2, 3].map(() => local.send(ndjson(events(1)), 'none', { dataset: 'from-file' })));
    await local.send(ndjson(events(2)), 'none');
    expect(await svc.store.count('from-file')).toBe(3);
    expect(await svc.store.count('logs')).toBe(2);
    await local.send(ndjson(events(1)), 'none', { dataset: '-not a name-' });
    expect(local.counters).toMatchObject({ eventsOut: 5, deadLettered: 1 });
    expect(readFileSync(join(dir, 'dead-letter.ndjson'), 'utf8')).toContain('invalid dataset name');
    // The service's own datasets are written by the service alone; an OTel signal goes to its kind's datasets.
    await local.send(ndjson(events(1)), 'none', { dataset: 'ferry-monitor-runs', params: {} });
    const traces = { dataset: 'spans', params: { datasetKind: 'otel:traces:v1' } };
    await local.send(ndjson(events(1)), 'none', traces);
    expect(svc.store.getDataset('spans').kind).toBe('otel:traces:v1');
    await local.send(ndjson(events(1)), 'none', { dataset: 'spans', params: { datasetKind: 'otel:logs:v1' } });
    expect(await svc.store.count('spans')).toBe(1);
    expect(local.counters).toMatchObject({ eventsOut: 6, deadLettered: 3 });
    const dead = readFileSync(join(dir, 'dead-letter.ndjson'), 'utf8');
    expect(dead).toContain('kept by the service itself');
    expect(dead).toContain('is of kind otel:traces:v1, not otel:logs:v1');
  });

  it("dead-letters a batch that would pass the dataset's field limit, and goes on delivering the next ones", async () => {
    const { svc, dir, local } = await localChain({ maxFieldsPerDataset: 8 });
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])));
    await local.send(ndjson(events(2)), 'none');
    await local.send(ndjson([wide]), 'none');
    await local.send(ndjson(events(3)), 'none');
    expect(await svc.store.count('logs')).toBe(5);
    expect(local.counters).toMatchObject({ eventsOut: 5, deadLettered: 1 });
    expect(local.health.state).toBe('ok');
    const dead = readFileSync(join(dir, 'dead-letter.ndjson'), 'utf8');
    expect(dead).toMatch(/"status":400/);
    expect(dead).toContain('more than the limit of 8');
  });

  it("delivers into Ferry's own service, and closing stops a retry loop without losing the batch", async () => {
    const svc = await startTestService();
    cleanups.push(() => svc.stop());
    await svc.createDataset('logs');
    const token = await svc.apiToken();
    const { s } = sink(svc.url, { token });
    await s.send(ndjson(events(10)), 'none');
    expect(await svc.store.count('logs')).toBe(10);

    // A batch queued compressed while the sink was an `axiom` one, delivered by a `local` sink.
    const local = new SendChain(new LocalSink(svc.store, 'logs'), {
      name: 'here',
      deadLetter: new DeadLetterFile(join(tempDir('ferry-sink-'), 'dead-letter.ndjson')),
    });
    await local.send(gzipSync(ndjson(events(4))), 'gzip');
    await local.send(zstdCompress(ndjson(events(1))), 'zstd');
    expect(local.counters).toMatchObject({ eventsOut: 5, deadLettered: 0 });
    expect(await svc.store.count('logs')).toBe(15);

    const down = sink('http://127.0.0.1:1', { token: ADMIN }).s;
    const pending = down.send(ndjson(events(1)), 'none');
    await new Promise((res) => setTimeout(res, 50));
    await down.close();
    await expect(pending).rejects.toThrow(/closed while delivering/);
  });
});
