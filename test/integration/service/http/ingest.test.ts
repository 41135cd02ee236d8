import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSink } from '../../../../src/agent/sinks/local.js';
import { startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let token: string;

beforeAll(async () => {
  svc = await startTestService({ maxBodyBytes: 64 * 1024, maxDecompressedBytes: 256 * 1024 });
  token = await svc.apiToken();
});
afterAll(async () => svc.stop());

let n = 0;
async function freshDataset(): Promise<string> {
  const name = `ingest-${++n}`;
  await svc.createDataset(name);
  return name;
}

async function ingest(
  ds: string,
  body: string | Uint8Array,
  headers: Record<string, string>,
  query = '',
  path = `/v1/ingest/${ds}`,
) {
  const r = await svc.call('POST', `${path}${query}`, body, token, headers);
  const json = (await r.json()) as Record<string, unknown>;
  return { status: r.status, json, headers: r.headers };
}

const NDJSON = { 'content-type': 'application/x-ndjson' };

describe('ingest bodies', () => {
  it('stores a JSON array and answers the six-field result', async () => {
    const ds = await freshDataset();
    const body = JSON.stringify([{ foo: 'bar' }, { bar: 'baz' }]);
    const { status, json, headers } = await ingest(ds, body, { 'content-type': 'application/json' });
    expect(status).toBe(200);
    expect(headers.get('content-type')).toMatch(/^application\/json/);
    expect(headers.get('x-axiom-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(json).toEqual({
      ingested: 2,
      failed: 0,
      failures: [],
      processedBytes: body.length,
      blocksCreated: 0,
      walLength: 0,
    });
    const events = await svc.store.readEvents(ds, { order: 'asc' });
    expect(events.map((e) => e.foo ?? e.bar)).toEqual(['bar', 'baz']);
  });

  it('reads one object per line under application/json and application/x-ndjson, on both paths', async () => {
    const ds = await freshDataset();
    const lines = '{"a":1}\n\n{"a":2}\n';
    expect((await ingest(ds, lines, { 'content-type': 'application/json' })).json.ingested).toBe(2);
    expect((await ingest(ds, lines, NDJSON, '', `/v1/datasets/${ds}/ingest`)).json.ingested).toBe(2);
    expect(await svc.store.count(ds)).toBe(4);
  });

  it('reports malformed lines in failures and stores the rest', async () => {
    const ds = await freshDataset();
    const body = '{"ok":1}\nnot json\n[1,2]\n{"ok":2}\n{"_time":"yesterday-ish","ok":3}\n';
    const { status, json } = await ingest(ds, body, NDJSON);
    expect(status).toBe(200);
    expect(json.ingested).toBe(2);
    expect(json.failed).toBe(3);
    const failures = json.failures as { timestamp: string; error: string }[];
    expect(failures.map((f) => f.error)).toEqual([
      'event 2: invalid JSON',
      'event 3: expected a JSON object, got array',
      'event 5: cannot parse _time value "yesterday-ish"',
    ]);
    for (const f of failures) expect(Number.isNaN(Date.parse(f.timestamp))).toBe(false);
    expect((await svc.store.readEvents(ds, { order: 'asc' })).map((e) => e.ok)).toEqual([1, 2]);
  });

  it('answers 400 for a JSON array body that does not parse', async () => {
    const ds = await freshDataset();
    const r = await ingest(ds, '[{"a":1}, {"a":', { 'content-type': 'application/json' });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe(400);
    expect(String(r.json.message)).toMatch(/invalid JSON body/);
    expect(String(r.json.message)).not.toMatch(/\/tmp|ingest-\d+/); // no server paths
    expect(await svc.store.count(ds)).toBe(0);
  });

  it('decompresses gzip and zstd, and takes an empty Content-Encoding as identity', async () => {
    const ds = await freshDataset();
    const body = '{"enc":"x"}\n{"enc":"y"}';
    for (const [enc, data] of [
      ['gzip', gzipSync(body)],
      ['zstd', zstdCompress(Buffer.from(body))],
      ['', Buffer.from(body)],
    ] as const) {
      const r = await ingest(ds, data, { ...NDJSON, 'content-encoding': enc });
      expect(r.status, enc).toBe(200);
      expect(r.json).toMatchObject({ ingested: 2, failed: 0, processedBytes: body.length });
    }
    expect(await svc.store.count(ds)).toBe(6);
  });

  it('refuses a JSON array cut short (no closing bracket) whole, storing nothing', async () => {
    const ds = await freshDataset();
    for (const body of ['[{"a":1},', '[{"a":1},\n  ', '[{"a":1}, {"b":2}']) {
      const r = await ingest(ds, body, { 'content-type': 'application/json' });
      expect(r.status, body).toBe(400);
      expect(String(r.json.message), body).toMatch(/^invalid JSON body/);
    }
    expect(await svc.store.count(ds)).toBe(0);
    expect((await ingest(ds, '[{"a":1}, {"b":2}]\n\n', { 'content-type': 'application/json' })).json).toMatchObject({
      ingested: 2,
      failed: 0,
    });
  });

  it('stores an empty key under the name _empty, at any depth, and queries read it', async () => {
    const ds = await freshDataset();
    const body = ['{"":1,"k":"top"}', '{"a":{"":2},"k":"nested"}', '{"x":{"":{"y":3}},"k":"deeper"}'].join('\n');
    expect((await ingest(ds, body, NDJSON)).json).toMatchObject({ ingested: 3, failed: 0 });
    const byK = Object.fromEntries((await svc.store.readEvents(ds)).map((e) => [e.k, e]));
    expect(byK.top).toMatchObject({ _empty: 1 });
    expect(byK.nested).toMatchObject({ 'a._empty': 2 });
    expect(byK.deeper).toMatchObject({ 'x._empty.y': 3 });
    const q = await svc.call(
      'POST',
      '/v1/query/_apl',
      { apl: `['${ds}'] | where isnotnull(['a._empty']) | project k, v = ['a._empty']` },
      token,
    );
    expect(q.status).toBe(200);
    const t = ((await q.json()) as { tables: { columns: unknown[][] }[] }).tables[0]!;
    expect(t.columns).toEqual([['nested'], [2]]);
  });

  it('an array nested thousands deep is stored, and every query returning it answers, with it as JSON text past 100 levels', async () => {
    const ds = await freshDataset();
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const body = [`{"d":${deep},"k":"deep"}`, '{"d":[[1,"]]"],[2]],"k":"shallow"}'].join('\n');
    expect((await ingest(ds, body, NDJSON)).json).toMatchObject({ ingested: 2, failed: 0 });
    for (const format of ['tabular', 'legacy']) {
      const r = await svc.call('POST', `/v1/query/_apl?format=${format}`, { apl: `['${ds}'] | project k, d` }, token);
      expect(r.status, format).toBe(200);
      const text = await r.text();
      expect(text).toContain(JSON.stringify(deep));
      expect(text).toContain('[[1,"]]"],[2]]');
    }
    const events = Object.fromEntries((await svc.store.readEvents(ds)).map((e) => [e.k, e.d]));
    expect(events).toEqual({ deep, shallow: [[1, ']]'], [2]] });
  });

  it('answers 400 for corrupt gzip and 415 for an unknown encoding', async () => {
    const ds = await freshDataset();
    expect((await ingest(ds, 'not gzip at all', { ...NDJSON, 'content-encoding': 'gzip' })).status).toBe(400);
    // zstd names its errors its own way ("Unknown frame descriptor", "Dictionary mismatch"): still the body's fault.
    for (const bad of ['not zstd at all', Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3])]) {
      const z = await ingest(ds, bad, { ...NDJSON, 'content-encoding': 'zstd' });
      expect(z.status).toBe(400);
      expect(String(z.json.message)).toMatch(/^cannot decompress zstd body: /);
    }
    const r = await ingest(ds, '{}', { ...NDJSON, 'content-encoding': 'br' });
    expect(r.status).toBe(415);
    expect(r.json.message).toMatch(/Content-Encoding/);
  });

  it('answers 413 for a body over the limit, compressed or once decompressed', async () => {
    const ds = await freshDataset();
    const big = `${'{"pad":"' + 'x'.repeat(1000) + '"}\n'}`.repeat(100); // ~100 KB > 64 KiB wire limit
    const r1 = await ingest(ds, big, NDJSON);
    expect(r1.status).toBe(413);
    expect(r1.json.code).toBe(413);
    const bomb = gzipSync(Buffer.alloc(1024 * 1024, 0x20)); // 1 MiB of spaces, ~1 KB gzipped
    const r2 = await ingest(ds, bomb, { ...NDJSON, 'content-encoding': 'gzip' });
    expect(r2.status).toBe(413);
    expect(r2.json.message).toMatch(/decompressed/);
    expect(await svc.store.count(ds)).toBe(0);
  });

  it('closes the connection of a request refused before its body ended, which then holds no shutdown open', async () => {
    const own = await startTestService({ maxBodyBytes: 64 * 1024 });
    await own.createDataset('d');
    const token = await own.apiToken();
    const url = new URL(`${own.url}/v1/ingest/d`);
    // The client sends more than the limit and waits: the answer says the connection closes, and it does.
    const answer = await new Promise<{ status?: number; connection?: string; closed: Promise<void> }>(
      (resolve, reject) => {
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
          },
          (res) => {
            res.resume();
            const closed = new Promise<void>((r) => req.socket!.once('close', () => r()));
            resolve({ status: res.statusCode, connection: res.headers.connection, closed });
          },
        );
        req.on('error', reject);
        req.write(Buffer.alloc(200 * 1024, 0x20)); // more than the limit, and no end
      },
    );
    expect(answer).toMatchObject({ status: 413, connection: 'close' });
    await answer.closed;
    await own.stop(); // hung while the connection stayed open waiting for the rest of the body
  });

  it('answers 400 for a field name with a NUL character, which the store cannot take', async () => {
    const ds = await freshDataset();
    const r = await ingest(ds, '{"a\\u0000b":1}', NDJSON);
    expect(r.status).toBe(400);
    expect(r.json.message).toMatch(/NUL character/);
    expect((await ingest(ds, '{"a":"value with \\u0000 inside"}', NDJSON)).json.ingested).toBe(1);
  });

  it('answers 404 with "not found" for an unknown dataset and 415 for an unknown content type', async () => {
    const r = await ingest('no-such-ds', '{}', NDJSON);
    expect(r.status).toBe(404);
    expect(r.json.message).toMatch(/not found/);
    const ds = await freshDataset();
    expect((await ingest(ds, '<xml/>', { 'content-type': 'application/xml' })).status).toBe(415);
  });
});

describe('CSV', () => {
  it('takes the header line as field names and does not store it', async () => {
    const ds = await freshDataset();
    const body = 'foo,n\nbar,1\nbaz,2\n';
    const { json } = await ingest(ds, body, { 'content-type': 'text/csv' });
    expect(json).toMatchObject({ ingested: 2, failed: 0, processedBytes: body.length });
    const events = await svc.store.readEvents(ds, { order: 'asc' });
    expect(events.map((e) => [e.foo, e.n])).toEqual([
      ['bar', '1'],
      ['baz', '2'],
    ]);
  });

  it('honours csv-delimiter and X-Axiom-CSV-Fields (then the first line is data)', async () => {
    const ds = await freshDataset();
    const { json } = await ingest(
      ds,
      'a;"b;c"\nd;e\n',
      { 'content-type': 'text/csv', 'x-axiom-csv-fields': 'first,second' },
      '?csv-delimiter=%3B',
    );
    expect(json.ingested).toBe(2);
    const events = await svc.store.readEvents(ds, { order: 'asc' });
    expect(events.map((e) => [e.first, e.second])).toEqual([
      ['a', 'b;c'],
      ['d', 'e'],
    ]);
  });

  it('treats an empty X-Axiom-CSV-Fields header as "use the header line" and reports ragged rows', async () => {
    const ds = await freshDataset();
    const { json } = await ingest(ds, 'x,y\n1,2\n3\n4,5\n', { 'content-type': 'text/csv', 'x-axiom-csv-fields': '' });
    expect(json.ingested).toBe(2);
    expect(json.failed).toBe(1);
    expect((json.failures as { error: string }[])[0]!.error).toMatch(/CSV line 3/);
  });
});

describe('time', () => {
  it('keeps nanosecond RFC 3339 times and applies offsets', async () => {
    const ds = await freshDataset();
    await ingest(
      ds,
      '{"_time":"2024-05-01T10:00:00.123456789Z","k":1}\n{"_time":"2024-05-01T12:00:00.5+02:00","k":2}',
      NDJSON,
    );
    const events = await svc.store.readEvents(ds, { order: 'asc' });
    expect(events.map((e) => e._time)).toEqual(['2024-05-01T10:00:00.123456789Z', '2024-05-01T10:00:00.5Z']);
  });

  it('reads epoch numbers in seconds, milliseconds, microseconds and nanoseconds', async () => {
    const ds = await freshDataset();
    const lines = [1714557600, 1714557600123, 1714557600123456, '1714557600123456789', 1714557600.25]
      .map((t, i) => JSON.stringify({ _time: t, i }))
      .join('\n');
    const { json } = await ingest(ds, lines, NDJSON);
    expect(json.ingested).toBe(5);
    const byI = Object.fromEntries((await svc.store.readEvents(ds)).map((e) => [e.i as number, e._time]));
    expect(byI).toEqual({
      0: '2024-05-01T10:00:00Z',
      1: '2024-05-01T10:00:00.123Z',
      2: '2024-05-01T10:00:00.123456Z',
      3: '2024-05-01T10:00:00.123456789Z',
      4: '2024-05-01T10:00:00.25Z',
    });
  });

  it('reads exponent notation, and reports an epoch beyond the timestamp range instead of failing the batch', async () => {
    const ds = await freshDataset();
    const body = [
      '{"_time":"1.7145576e9","i":0}',
      '{"_time":"12345678901234567890123456789.5","i":1}',
      '{"_time":1e28,"i":2}',
    ].join('\n');
    for (const format of ['', '?timestamp-format=unix']) {
      const { status, json } = await ingest(ds, body, NDJSON, format);
      expect(status).toBe(200);
      expect(json).toMatchObject({ ingested: 1, failed: 2 });
      expect((json.failures as { error: string }[]).map((f) => f.error)).toEqual([
        expect.stringMatching(/^event 2: cannot parse _time value "12345678901234567890123456789.5"/),
        expect.stringMatching(/^event 3: cannot parse _time value/),
      ]);
    }
    const events = await svc.store.readEvents(ds);
    expect(events.map((e) => e._time)).toEqual(['2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z']);
  });

  it('uses timestamp-field and a Go timestamp-format, keeping the original field', async () => {
    const ds = await freshDataset();
    const body = '{"ts":"1/May/2024:10:00:00 +0200","msg":"a"}\n{"ts":"garbage","msg":"b"}';
    const { json } = await ingest(
      ds,
      body,
      NDJSON,
      `?timestamp-field=ts&timestamp-format=${encodeURIComponent('2/Jan/2006:15:04:05 -0700')}`,
    );
    expect(json.ingested).toBe(1);
    expect((json.failures as { error: string }[])[0]!.error).toBe(
      'event 2: cannot parse ts value "garbage" with format "2/Jan/2006:15:04:05 -0700"',
    );
    const [ev] = await svc.store.readEvents(ds);
    expect(ev).toMatchObject({ _time: '2024-05-01T08:00:00Z', ts: '1/May/2024:10:00:00 +0200', msg: 'a' });
  });

  it('keeps the timestamp-field in a dataset that already has fields, top-level and nested, batch after batch', async () => {
    const ds = await freshDataset();
    await ingest(ds, '[{"v":1,"o":{"x":1}}]', { 'content-type': 'application/json' });
    for (const v of [2, 3]) {
      const { json } = await ingest(
        ds,
        `[{"when":"2026-11-25T10:00:0${v}Z","v":${v}}]`,
        { 'content-type': 'application/json' },
        '?timestamp-field=when',
      );
      expect(json).toMatchObject({ ingested: 1, failed: 0 });
    }
    await ingest(
      ds,
      '[{"o":{"x":4,"t":"2026-11-25T11:00:00Z"}}]',
      { 'content-type': 'application/json' },
      '?timestamp-field=o.t',
    );
    // In time order: the first event took the receive time, after the others'.
    const events = await svc.store.readEvents(ds, { order: 'asc' });
    expect(events.slice(0, 3)).toEqual([
      expect.objectContaining({ _time: '2026-11-25T10:00:02Z', when: '2026-11-25T10:00:02Z', v: 2 }),
      expect.objectContaining({ _time: '2026-11-25T10:00:03Z', when: '2026-11-25T10:00:03Z', v: 3 }),
      expect.objectContaining({ _time: '2026-11-25T11:00:00Z', 'o.t': '2026-11-25T11:00:00Z', 'o.x': 4 }),
    ]);
  });

  it('gives events without a time the receive time, and every event an ingest time', async () => {
    const ds = await freshDataset();
    const before = Date.now();
    await ingest(ds, '{"x":1}', NDJSON);
    const [ev] = await svc.store.readEvents(ds);
    expect(Date.parse(ev!._time)).toBeGreaterThanOrEqual(before - 1);
    expect(ev!._time).toBe(ev!._sysTime);
  });

  it('answers 400 for a timestamp-format that is not a layout', async () => {
    const ds = await freshDataset();
    const r = await ingest(ds, '{"x":1}', NDJSON, '?timestamp-format=hello');
    expect(r.status).toBe(400);
    expect(r.json.message).toMatch(/timestamp-format/);
  });
});

describe('a batch larger than memory allows', () => {
  it('is a 413 saying to send smaller requests, nothing of it stored, and the service goes on', async () => {
    const small = await startTestService({
      memoryLimitBytes: 96 * 1024 * 1024,
      maxBodyBytes: 256 * 1024 * 1024,
      maxDecompressedBytes: 256 * 1024 * 1024,
    });
    try {
      await small.createDataset('big');
      const t = await small.apiToken({ big: { ingest: ['create'], query: ['read'] } });
      const body = Array.from({ length: 10 }, (_, i) => JSON.stringify({ i, blob: 'x'.repeat(8 * 1024 * 1024) })).join(
        '\n',
      );
      const r = await small.call('POST', '/v1/ingest/big', body, t, NDJSON);
      const answer = (await r.json()) as { code?: number; message?: string; ingested?: number };
      expect(r.status, JSON.stringify(answer).slice(0, 300)).toBe(413);
      expect(answer.message).toMatch(/needs more memory than service.memory_limit .*send it in smaller requests/);
      expect(await small.store.readEvents('big')).toEqual([]);
      const ok = await small.call('POST', '/v1/ingest/big', '{"i":1}', t, NDJSON);
      expect(ok.status).toBe(200);
    } finally {
      await small.stop();
    }
  }, 60_000);
});

describe('the grouped event form', () => {
  it('takes the time from time, the fields from data and each label as a field; other shapes stay events', async () => {
    const ds = await freshDataset();
    const body = [
      { time: '2026-11-25T10:00:00Z', data: { msg: 'a', n: 1, o: { x: 2 } }, labels: { env: 'prod', n: 9 } },
      { data: { msg: 'b' } },
      { time: 1764064800, data: { msg: 'c' } },
      { data: 'not an object', time: '2026-11-25T10:00:00Z' },
      { data: { msg: 'e' }, extra: 1 },
      // A time that is no time (true, an object) is not the form: the event keeps every key as sent.
      { data: { msg: 'f' }, time: true },
    ];
    const { json } = await ingest(ds, JSON.stringify(body), { 'content-type': 'application/json' });
    expect(json).toMatchObject({ ingested: 6, failed: 0 });
    const events = await svc.store.readEvents(ds, { order: 'asc' });
    const strip = (e: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(e).filter(([k, v]) => v !== null && !['_rowId', '_sysTime'].includes(k)));
    const byMsg = new Map(events.map((e) => [e.msg ?? e['data.msg'] ?? e.data, strip(e)]));
    // A label replaces a field of the same name, as X-Axiom-Event-Labels does.
    expect(byMsg.get('a')).toEqual({ _time: '2026-11-25T10:00:00Z', msg: 'a', n: 9, 'o.x': 2, env: 'prod' });
    expect(byMsg.get('b')).toMatchObject({ msg: 'b' });
    expect(byMsg.get('c')).toEqual({ _time: '2025-11-25T10:00:00Z', msg: 'c' });
    expect(byMsg.get('not an object')).toMatchObject({ data: 'not an object', time: '2026-11-25T10:00:00Z' });
    expect(byMsg.get('e')).toMatchObject({ 'data.msg': 'e', extra: 1 });
    // Its time shares a field with event 4's string time: widened to text.
    expect(byMsg.get('f')).toMatchObject({ 'data.msg': 'f', time: 'true' });
  });

  it("finds the form after a long gzip body of other events, and through the agent's local sink", async () => {
    // The body's bytes are screened for "data" on their way to the spool (ingest/body-facts.ts).
    const others = Array.from({ length: 4000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(i % 89) }));
    const grouped = JSON.stringify({ time: '2026-11-25T10:00:00Z', data: { msg: 'late' }, labels: { env: 'prod' } });
    const ds = await freshDataset();
    const r = await svc.call('POST', `/v1/ingest/${ds}`, gzipSync(`${others.join('\n')}\n${grouped}`), token, {
      ...NDJSON,
      'content-encoding': 'gzip',
    });
    expect(r.status).toBe(200);
    const local = await freshDataset();
    expect(await new LocalSink(svc.store, local).send(Buffer.from(`{"i":1}\n${grouped}`), 'none')).toMatchObject({
      kind: 'delivered',
    });
    for (const d of [ds, local]) {
      const events = await svc.store.readEvents(d, { order: 'asc' });
      expect(events.find((e) => e.msg === 'late')).toMatchObject({ _time: '2026-11-25T10:00:00Z', env: 'prod' });
      expect(events.some((e) => e['data.msg'] !== undefined && e['data.msg'] !== null)).toBe(false);
    }
  });
});

describe('labels and processedBytes', () => {
  it('adds X-Axiom-Event-Labels to every event and counts their bytes', async () => {
    const ds = await freshDataset();
    const labels = '{"region":"eu-west-1"}';
    const body = '{"a":1}\n{"a":2}';
    const { json } = await ingest(ds, body, { ...NDJSON, 'x-axiom-event-labels': labels });
    expect(json.processedBytes).toBe(body.length + labels.length);
    expect((await svc.store.readEvents(ds)).map((e) => e.region)).toEqual(['eu-west-1', 'eu-west-1']);
  });

  it('renames labels with reserved names like event fields', async () => {
    const ds = await freshDataset();
    await ingest(ds, '{"a":1}', { ...NDJSON, 'x-axiom-event-labels': '{"_sysTime":"label","_time":"label"}' });
    const [ev] = await svc.store.readEvents(ds);
    expect(ev).toMatchObject({ _user_sysTime: 'label', _user_time: 'label', a: 1 });
    expect(Date.parse(ev!._sysTime)).not.toBeNaN();
  });

  it('answers 400 for labels that are not a JSON object', async () => {
    const ds = await freshDataset();
    expect((await ingest(ds, '{}', { ...NDJSON, 'x-axiom-event-labels': '[1]' })).status).toBe(400);
  });
});
