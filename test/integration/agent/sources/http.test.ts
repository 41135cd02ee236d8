/**
 * The `http` source (the agent's Axiom-compatible relay) in-process, with a pipeline the test plays: the
 * same bodies posted to the relay and to the embedded service get the same answer (status, counts,
 * failures); a request refused for any reason hands on nothing; 200 comes only once the events are
 * queued; tokens, routes, limits, a full queue and a stopping agent get their status.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync, deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compress as zstdCompress } from 'zstd-napi';
import { HttpSource, type HttpSourceSettings } from '../../../../src/agent/sources/http.js';
import type { SourceLine } from '../../../../src/agent/sources/source.js';
import { startTestService, type TestService } from '../../../support/helpers.js';

const TOKEN = 'relay-secret';

const settings = (extra: Partial<HttpSourceSettings> = {}): HttpSourceSettings => ({
  address: { host: '127.0.0.1', port: 0 },
  tokens: [TOKEN, 'another'],
  maxBodyBytes: 1024 * 1024,
  maxDecompressedBytes: 4 * 1024 * 1024,
  maxInflightBytes: 16 * 1024 * 1024,
  maxConnections: 64,
  maxEvents: 100_000,
  idleTimeoutMs: 30_000,
  queueTimeoutMs: 5_000,
  ...extra,
});

/** The pipeline as the test plays it: lines are kept, and queued (acknowledged) when the source flushes. */
interface Relay {
  source: HttpSource;
  url: string;
  lines: SourceLine[];
  flushes: number;
  /** While set, flushes do not acknowledge (the queue is full). */
  hold: boolean;
  /** When set, flushes say the queue dropped the lines (drop_newest). */
  drop: boolean;
  /** While set, the pipeline is full: every emit waits on it (when_full: block). */
  full?: Promise<void>;
  post(path: string, body: string | Buffer, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
}

const relays: HttpSource[] = [];
afterEach(async () => {
  for (const s of relays.splice(0)) {
    await s.stop();
    await s.close();
  }
});

async function relay(s: HttpSourceSettings = settings()): Promise<Relay> {
  const pending: SourceLine[] = [];
  const r: Relay = {
    source: undefined as unknown as HttpSource,
    url: '',
    lines: [],
    flushes: 0,
    hold: false,
    drop: false,
    async post(path, body, headers = {}) {
      const res = await fetch(`${r.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
        body: body as BodyInit,
      });
      return { status: res.status, body: await res.json() };
    },
  };
  const log = { info: () => undefined, warn: () => undefined, error: () => undefined };
  r.source = new HttpSource('apps', s, log, async () => {
    r.flushes++;
    if (r.hold) return;
    for (const l of pending.splice(0)) {
      if (r.drop) l.stream.dropped?.();
      l.stream.acknowledge(l.offset, l.generation);
    }
  });
  relays.push(r.source);
  await r.source.start((l) => {
    r.lines.push(l);
    pending.push(l);
    return r.full;
  });
  r.url = `http://127.0.0.1:${r.source.port}`;
  return r;
}

/**
 * An answer as it can be compared: a result without its timestamps (which differ by when each was made),
 * an error by its code (its wording is each reader's own: DuckDB's, or the relay's).
 */
function comparable(body: any): unknown {
  if (body && typeof body === 'object' && 'code' in body && 'message' in body) return { code: body.code };
  if (!body || typeof body !== 'object' || !Array.isArray(body.failures)) return body;
  return { ...body, failures: body.failures.map((f: { error: string }) => f.error) };
}

describe('the relay answers as the service does', () => {
  let svc: TestService;
  let ingestToken: string;
  beforeAll(async () => {
    svc = await startTestService({ maxBodyBytes: 1024 * 1024, maxDecompressedBytes: 4 * 1024 * 1024 });
    ingestToken = await svc.apiToken();
  });
  afterAll(async () => svc.stop());

  let datasets = 0;

  /** The answers of both to one request; each request goes to a new dataset, whose field limit it cannot reach. */
  async function both(
    body: string | Buffer,
    headers: Record<string, string>,
    query = '',
  ): Promise<{ service: unknown; relay: unknown; relayed: string[] }> {
    const dataset = `same${++datasets}`;
    await svc.createDataset(dataset);
    const r = await relay();
    const fromRelay = await r.post(`/v1/ingest/${dataset}${query}`, body, headers);
    const res = await fetch(`${svc.url}/v1/ingest/${dataset}${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingestToken}`, ...headers },
      body: body as BodyInit,
    });
    return {
      service: { status: res.status, body: comparable(await res.json()) },
      relay: { status: fromRelay.status, body: comparable(fromRelay.body) },
      relayed: r.lines.map((l) => l.text),
    };
  }

  const JSON_TYPE = { 'content-type': 'application/json' };
  const NDJSON_TYPE = { 'content-type': 'application/x-ndjson' };
  const CASES: [string, string | Buffer, Record<string, string>, string?][] = [
    [
      'an array of objects and other values',
      '[{"a":1},2,"x",null,[1],{"b":2},-3,1.5,true,18446744073709551616]',
      JSON_TYPE,
    ],
    ['NDJSON with junk and blank lines', '{"a":1}\n2\n{bad\n\n  \n{"c":3}\r\n[1]\nnull\n', NDJSON_TYPE],
    ['NDJSON sent as JSON', '{"a":1}\n{"b":2}', JSON_TYPE],
    ['a pretty-printed object', '{"a":\n1}', JSON_TYPE],
    ['a malformed array', '[{"a":1},{bad}]', JSON_TYPE],
    ['an array with trailing text', '[{"a":1}] x', JSON_TYPE],
    ['an array cut short', '[{"a":1},', JSON_TYPE],
    ['an empty array', '[]', JSON_TYPE],
    ['an empty body', '', JSON_TYPE],
    ['a byte order mark', '\uFEFF[{"a":1}]', JSON_TYPE],
    ['CSV with bad records', 'a,b\n1,2\n3\n"x', { 'content-type': 'text/csv' }],
    [
      'CSV with named fields and a delimiter',
      '1;2\n3;4',
      { 'content-type': 'text/csv', 'x-axiom-csv-fields': 'x,y' },
      '?csv-delimiter=;',
    ],
    ['an unknown content type', '{"a":1}', { 'content-type': 'text/plain' }],
    ['byte order marks: one starting the body, one on a later line', '\uFEFF{"a":1}\n\uFEFF{"b":2}', NDJSON_TYPE],
    [
      'no-break spaces: a line of one, one inside a value, one around',
      '\u00A0\n{"a":"\u00A0"}\n\u00A0{"b":1}',
      NDJSON_TYPE,
    ],
    ['a no-break space inside an array', '[{"a":1},\u00A0{"b":2}]', JSON_TYPE],
    ['a no-break space before an array', '\u00A0[{"a":1}]', JSON_TYPE],
    [
      'invalid UTF-8 on an NDJSON line',
      Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n{"b":2}')]),
      NDJSON_TYPE,
    ],
    [
      'invalid UTF-8 in an array',
      Buffer.concat([Buffer.from('[{"a":"'), Buffer.from([0xc3]), Buffer.from('"}]')]),
      JSON_TYPE,
    ],
    ['a bad timestamp-format', '{"a":1}', NDJSON_TYPE, '?timestamp-format=%25%25'],
    ['labels that are not an object', '{"a":1}', { ...NDJSON_TYPE, 'x-axiom-event-labels': '[1]' }],
    ['labels', '{"a":1}', { ...NDJSON_TYPE, 'x-axiom-event-labels': '{"env":"prod"}' }],
    ['gzip', gzipSync('[{"a":1},{"b":2}]'), { ...JSON_TYPE, 'content-encoding': 'gzip' }],
    // A gzip trailer gives its own member's size only: the relay inflates a small body whole by it.
    [
      'gzip of several members (as Ferry ships its batches)',
      Buffer.concat([gzipSync('{"a":1}\n{"a":2}\n'), gzipSync('{"b":2}\n')]),
      { ...NDJSON_TYPE, 'content-encoding': 'gzip' },
    ],
    [
      'gzip of several members, the last one empty',
      Buffer.concat([gzipSync('{"a":1}\n{"a":2}'), gzipSync('')]),
      { ...NDJSON_TYPE, 'content-encoding': 'gzip' },
    ],
    [
      'gzip whose trailer claims another size',
      ((z: Buffer) => (z.writeUInt32LE(z.readUInt32LE(z.length - 4) + 1000, z.length - 4), z))(gzipSync('{"a":1}')),
      { ...NDJSON_TYPE, 'content-encoding': 'gzip' },
    ],
    [
      'gzip followed by zeros and a size it does not hold',
      Buffer.concat([gzipSync('{"a":1}'), Buffer.from([0, 0, 0, 0, 0, 0, 0x40, 0])]),
      { ...NDJSON_TYPE, 'content-encoding': 'gzip' },
    ],
    [
      'gzip of several members past max_decompressed_bytes, the last one small',
      Buffer.concat([gzipSync(`${'{"a":1}\n'.repeat(600_000)}`), gzipSync('{"b":2}\n')]),
      { ...NDJSON_TYPE, 'content-encoding': 'gzip' },
    ],
    ['zstd', zstdCompress(Buffer.from('{"a":1}\n{"b":2}')), { ...NDJSON_TYPE, 'content-encoding': 'zstd' }],
    ['deflate', deflateSync('{"a":1}'), { ...NDJSON_TYPE, 'content-encoding': 'deflate' }],
    ['corrupt gzip', Buffer.from('not gzip at all'), { ...JSON_TYPE, 'content-encoding': 'gzip' }],
    ['an unknown encoding', '{"a":1}', { ...JSON_TYPE, 'content-encoding': 'br' }],
    ['a body over max_body_bytes', `[${'{"a":1},'.repeat(150_000)}{"a":1}]`, JSON_TYPE],
    [
      'a body over max_decompressed_bytes',
      gzipSync(`${'{"a":1}\n'.repeat(600_000)}`),
      { ...NDJSON_TYPE, 'content-encoding': 'gzip' },
    ],
  ];

  for (const [what, body, headers, query] of CASES) {
    it(`for ${what}`, async () => {
      const r = await both(body, headers, query);
      expect(r.relay).toEqual(r.service);
      // A refused request hands on nothing.
      if ((r.relay as { status: number }).status !== 200) expect(r.relayed).toEqual([]);
    });
  }

  it('for random bodies of JSON values, whole or cut, as arrays and as NDJSON (fast-check)', async () => {
    const value = fc.oneof(
      fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
      fc.jsonValue({ maxDepth: 2 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(value, { maxLength: 8 }),
        fc.boolean(),
        fc.nat({ max: 100 }),
        fc.array(fc.constantFrom('\n', '', ' ', '\r\n', '{', '}', ',', '"'), { maxLength: 3 }),
        async (values, asArray, cutPercent, junk) => {
          const whole = asArray
            ? JSON.stringify(values)
            : values.map((v) => JSON.stringify(v)).join('\n') + junk.join('');
          // Bodies cut short or with junk appended: both must refuse or fail the same events.
          const body = cutPercent > 90 ? whole.slice(0, Math.floor((whole.length * (cutPercent - 90)) / 10)) : whole;
          const r = await both(body, asArray ? JSON_TYPE : NDJSON_TYPE);
          expect(r.relay).toEqual(r.service);
          const ingested = (r.relay as { body: { ingested?: number } }).body.ingested ?? 0;
          expect(r.relayed).toHaveLength(ingested);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('hands each event on as the client wrote it: key order, duplicate keys and large integers kept', async () => {
    const r = await relay();
    const events = ['{"b":1,"a":2,"1":3}', '{"k":1,"k":2}', '{"big":123456789012345678901234567890}'];
    const res = await r.post('/v1/ingest/keep', `[ ${events.join(' ,\n')} ]`, JSON_TYPE);
    expect(res.status).toBe(200);
    expect(r.lines.map((l) => l.text)).toEqual(events);
    expect(r.lines.every((l) => l.structured && l.dataset === 'keep')).toBe(true);
  });
});

describe('the relay', () => {
  it('refuses a body of more than max_events values with 413 at once, and lists at most 1000 failures', async () => {
    const r = await relay(settings({ maxEvents: 5000 }));
    const ones = `[${Array(6000).fill('1').join(',')}]`;
    const big = await r.post('/v1/ingest/logs', ones);
    expect(big).toMatchObject({ status: 413, body: { message: expect.stringMatching(/more than 5000 events/) } });
    const many = await r.post('/v1/ingest/logs', `[${Array(3000).fill('1').join(',')},{"a":1}]`);
    expect(many.status).toBe(200);
    expect(many.body).toMatchObject({ ingested: 1, failed: 3000 });
    expect(many.body.failures).toHaveLength(1000);
    expect(r.lines).toHaveLength(1);
  });

  it('answers 503 at queue_timeout when the pipeline holds the events back (a full queue), and gives the memory back after', async () => {
    const r = await relay(settings({ queueTimeoutMs: 300 }));
    let open!: () => void;
    r.full = new Promise<void>((res) => (open = res));
    const held = await r.post('/v1/ingest/logs', '{"a":1}\n{"a":2}');
    expect(held.status).toBe(503);
    expect(held.body.message).toMatch(/not queued within 0.3s/);
    expect(r.source.gauges().find((g) => g.name === 'ferry_source_http_inflight_bytes')!.value).toBeGreaterThan(0);
    r.full = undefined;
    open();
    await new Promise((res) => setTimeout(res, 50));
    expect(r.source.gauges().find((g) => g.name === 'ferry_source_http_inflight_bytes')!.value).toBe(0);
    expect(r.lines).toHaveLength(2); // handed on after all: they may still be shipped (at least once)
  });

  it('counts a client that goes away mid-body as a closed request (499), not an error of its own (500)', async () => {
    const r = await relay();
    const { connect } = await import('node:net');
    const socket = connect(r.source.port, '127.0.0.1');
    await new Promise<void>((res) => socket.once('connect', () => res()));
    socket.write(
      `POST /v1/ingest/logs HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"a":`,
    );
    await new Promise((res) => setTimeout(res, 100));
    socket.destroy();
    const requests = () =>
      r.source
        .gauges()
        .filter((g) => g.name === 'ferry_source_http_requests_total')
        .map((g) => [g.labels.code, g.value]);
    const deadline = Date.now() + 5_000;
    while (requests().length === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
    expect(requests()).toEqual([['499', 1]]);
    expect(r.lines).toEqual([]);
  });

  it('closes connections that send nothing after idle_timeout, and takes only the datasets it is given', async () => {
    const r = await relay(settings({ idleTimeoutMs: 200, datasets: ['app-*'] }));
    const { connect } = await import('node:net');
    const socket = connect(r.source.port, '127.0.0.1');
    const closed = await new Promise<boolean>((res) => {
      socket.once('close', () => res(true));
      setTimeout(() => res(false), 5_000);
    });
    expect(closed).toBe(true);
    expect((await r.post('/v1/ingest/app-web', '{"a":1}')).status).toBe(200);
    // Kept-alive connections are said to last no longer than idle_timeout, so clients do not reuse a closed one.
    const patient = await relay(settings({ idleTimeoutMs: 5_000 }));
    const { request } = await import('node:http');
    const keepAlive = await new Promise<string | undefined>((res, rej) => {
      const req = request(
        `${patient.url}/v1/ingest/logs`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', connection: 'keep-alive' },
        },
        (answer) => {
          answer.resume();
          res(String(answer.headers['keep-alive']));
        },
      );
      req.on('error', rej);
      req.end('{"a":1}');
    });
    expect(keepAlive).toBe('timeout=5');
    const other = await r.post('/v1/ingest/billing', '{"a":1}');
    expect(other).toMatchObject({ status: 403, body: { message: expect.stringMatching(/not one this source takes/) } });
  });

  it('takes the dataset from either path, and the time parameters and labels with the events', async () => {
    const r = await relay();
    const a = await r.post('/v1/ingest/one?timestamp-field=ts&timestamp-format=unixms', '{"ts":1}', {
      'x-axiom-event-labels': '{"env":"prod"}',
    });
    const b = await r.post('/v1/datasets/two/ingest', '{"x":1}');
    const c = await r.post('/v1/ingest/one?timestamp-field=ts&timestamp-format=unixms', '{"ts":2}', {
      'x-axiom-event-labels': '{"env":"prod"}',
    });
    expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
    expect(r.lines.map((l) => [l.dataset, l.params])).toEqual([
      ['one', { timestampField: 'ts', timestampFormat: 'unixms', labels: { env: 'prod' } }],
      ['two', {}],
      ['one', { timestampField: 'ts', timestampFormat: 'unixms', labels: { env: 'prod' } }],
    ]);
    // Equal parameters are one object, so the batcher does not cut batches between such requests.
    expect(r.lines[0]!.params).toBe(r.lines[2]!.params);
  });

  it('answers 200 only once the events are queued, and 503 when they are not queued in time', async () => {
    const r = await relay(settings({ queueTimeoutMs: 300 }));
    r.hold = true;
    let answered = false;
    const first = r.post('/v1/ingest/logs', '{"a":1}').then((x) => ((answered = true), x));
    await new Promise((res) => setTimeout(res, 100));
    expect(answered).toBe(false);
    expect(r.lines).toHaveLength(1);
    const late = await first;
    expect(late.status).toBe(503);
    expect(late.body.message).toMatch(/not queued within 0.3s/);
    r.hold = false;
    const ok = await r.post('/v1/ingest/logs', '{"a":2}');
    expect(ok).toMatchObject({ status: 200, body: { ingested: 1, failed: 0 } });
    expect(r.flushes).toBeGreaterThanOrEqual(2);
  });

  it('answers 503 when a full queue dropped the events (when_full: drop_newest)', async () => {
    const r = await relay();
    r.drop = true;
    const res = await r.post('/v1/ingest/logs', '{"a":1}\n{"a":2}');
    expect(res.status).toBe(503);
    expect(res.body.message).toMatch(/drop_newest/);
    expect(r.source.status().degraded).toBe(true);
  });

  it('refuses missing and unknown tokens, unknown routes, other methods and bad dataset names', async () => {
    const r = await relay();
    const call = async (path: string, init: RequestInit) => {
      const res = await fetch(`${r.url}${path}`, {
        ...init,
        headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
      });
      return { status: res.status, body: (await res.json()) as { code: number; message: string } };
    };
    expect(await call('/v1/ingest/logs', { method: 'POST', body: '{}' })).toEqual({
      status: 401,
      body: { code: 401, message: 'Unauthorized: send Authorization: Bearer <token>' },
    });
    const wrong = await call('/v1/ingest/logs', {
      method: 'POST',
      body: '{}',
      headers: { authorization: 'Bearer relay-secreT' },
    });
    expect(wrong).toEqual({ status: 401, body: { code: 401, message: 'Unauthorized: invalid token' } });
    // Any listed token is taken.
    expect(
      (await call('/v1/ingest/logs', { method: 'POST', body: '{}', headers: { authorization: 'bearer another' } }))
        .status,
    ).toBe(200);
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await call('/v1/query/_apl', { method: 'POST', body: '{}', headers: auth })).status).toBe(404);
    const get = await fetch(`${r.url}/v1/ingest/logs`, { headers: auth });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    expect(await call('/v1/ingest/-bad-', { method: 'POST', body: '{}', headers: auth })).toMatchObject({
      status: 400,
      body: { message: expect.stringMatching(/invalid dataset name "-bad-"/) },
    });
    expect((await call('/v1/ingest/axiom-audit', { method: 'POST', body: '{}', headers: auth })).status).toBe(400);
    expect((await call('/v1/ingest/%E0%A4%A', { method: 'POST', body: '{}', headers: auth })).status).toBe(400);
    expect(r.lines).toHaveLength(1);
    expect(r.source.status().warnings.join('\n')).toMatch(/401 .*invalid token/);
  });

  it('answers 503 past max_inflight_bytes while bodies wait to be handed on, and takes requests again once they are', async () => {
    const r = await relay(settings({ maxInflightBytes: 250_000, maxDecompressedBytes: 80_000 }));
    // The pipeline is full: the bodies of the requests being handed on stay in memory.
    let open!: () => void;
    r.full = new Promise<void>((res) => (open = res));
    const big = `[${Array.from({ length: 1000 }, (_, i) => `{"i":${i}}`).join(',')}]`; // ~10 KB, 30 KB counted
    const held = Array.from({ length: 7 }, () => r.post('/v1/ingest/logs', big));
    await new Promise((res) => setTimeout(res, 200));
    const bigger = big.replace(/\]$/, `,${'{"pad":1},'.repeat(2000)}{"x":1}]`);
    const refused = await r.post('/v1/ingest/logs', bigger);
    expect(refused.status).toBe(503);
    expect(refused.body.message).toMatch(/max_inflight_bytes/);
    // Compressed, it is counted by what it inflates to before it is inflated.
    const zipped = await r.post('/v1/ingest/logs', gzipSync(bigger), { 'content-encoding': 'gzip' });
    expect(zipped.status).toBe(503);
    expect(zipped.body.message).toMatch(/max_inflight_bytes/);
    r.full = undefined;
    open();
    const answers = await Promise.all(held);
    expect(answers.map((a) => a.status)).toEqual(Array(7).fill(200));
    expect((await r.post('/v1/ingest/logs', big)).status).toBe(200);
  });

  it('takes a gzip body that inflates to max_decompressed_bytes when max_inflight_bytes is the least the config allows', async () => {
    const max = 2 * 1024 * 1024;
    const r = await relay(settings({ maxDecompressedBytes: max, maxInflightBytes: 3 * max }));
    // Lines that compress poorly: the body is large on the wire too (while it is inflated, it is held).
    let text = '';
    for (let i = 0; text.length < max - 200; i++)
      text += `${JSON.stringify({ i, r: randomBytes(3).toString('hex') })}\n`;
    const body = gzipSync(text);
    expect(body.length).toBeGreaterThan(256 * 1024);
    const res = await r.post('/v1/ingest/logs', body, {
      'content-type': 'application/x-ndjson',
      'content-encoding': 'gzip',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(r.lines).toHaveLength(text.split('\n').length - 1);
  });

  it('refuses new requests once stopping, and answers those already handing events on', async () => {
    const r = await relay();
    r.hold = true;
    const inFlight = r.post('/v1/ingest/logs', '{"a":1}');
    await new Promise((res) => setTimeout(res, 100));
    const stopped = r.source.stop();
    await stopped;
    // The pipeline queues what was handed on (as Pipeline.stop flushes the sinks), then the source closes.
    r.hold = false;
    for (const l of r.lines) l.stream.acknowledge(l.offset, l.generation);
    expect((await inFlight).status).toBe(200);
    // A new request finds no listener, or, on a connection still open, a 503.
    const late = await fetch(`${r.url}/v1/ingest/logs`, { method: 'POST', body: '{}' }).then(
      (res) => res.status,
      () => 'refused',
    );
    expect([503, 'refused']).toContain(late);
  });
});
