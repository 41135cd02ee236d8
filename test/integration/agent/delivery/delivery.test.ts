import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { crc32, gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { Batcher, STAGE_BYTES } from '../../../../src/agent/delivery/batcher.js';
import { BufferPool } from '../../../../src/agent/queue/buffer-pool.js';
import { splitLines } from '../../../../src/agent/delivery/batch.js';
import { Delivery, lineOf } from '../../../../src/agent/delivery/delivery.js';
import { Event } from '../../../../src/agent/event.js';
import { EnrichTransform } from '../../../../src/agent/transforms/enrich.js';
import { ParseTransform } from '../../../../src/agent/transforms/parse.js';
import { jsonParser } from '../../../../src/agent/parsers/json.js';
import { hostname } from 'node:os';
import { SendLoop } from '../../../../src/agent/delivery/send-loop.js';
import { encodingTag } from '../../../../src/agent/delivery/encoding.js';
import { DiskQueue } from '../../../../src/agent/queue/disk-queue.js';
import { AxiomSink } from '../../../../src/agent/sinks/axiom.js';
import { SendChain } from '../../../../src/agent/delivery/send-chain.js';
import { DeadLetterFile } from '../../../../src/agent/delivery/dead-letter.js';
import { tempDir } from '../../../support/helpers.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A receiver that records every event it accepted; `failing` makes it answer 503. */
async function receiver(): Promise<{ url: string; received: number[]; state: { failing: boolean }; server: Server }> {
  const received: number[] = [];
  const state = { failing: false };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (state.failing) {
        res.writeHead(503);
        res.end();
        return;
      }
      const lines = gunzipSync(Buffer.concat(chunks)).toString().split('\n').filter(Boolean);
      for (const l of lines) received.push((JSON.parse(l) as { i: number }).i);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ingested: lines.length, failed: 0, failures: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received, state, server };
}

function sinkTo(url: string): SendChain {
  const s = new SendChain(new AxiomSink({ name: 'out', url, dataset: 'logs', token: 't', compression: 'gzip' }), {
    name: 'out',
    deadLetter: new DeadLetterFile(`${tempDir()}/dl.ndjson`),
    backoff: { initialMs: 5, maxMs: 40 },
  });
  cleanups.push(() => s.close());
  return s;
}

const until = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('batcher', () => {
  it('cuts batches by count, by bytes, and by time', async () => {
    const batches: string[][] = [];
    const b = new Batcher(
      { maxEvents: 10, maxBytes: 1000, timeoutMs: 50 },
      async (b) => void batches.push(splitLines(Buffer.concat(b))),
    );
    for (let i = 0; i < 25; i++) await b.add(`{"i":${i}}`);
    expect(batches.map((x) => x.length)).toEqual([10, 10]);
    await until(() => batches.length === 3);
    expect(batches[2]).toHaveLength(5);
    const big = new Batcher(
      { maxEvents: 1000, maxBytes: 100, timeoutMs: 10_000 },
      async (b) => void batches.push(splitLines(Buffer.concat(b))),
    );
    for (let i = 0; i < 4; i++) await big.add('x'.repeat(40));
    await until(() => batches.length === 4);
    expect(batches[3]).toHaveLength(3); // 3 × 41 bytes passes 100
    await big.flush();
    expect(batches[4]).toHaveLength(1);
  });

  it('acknowledges the place of a dropped line after the lines before it, in a batch that ships nothing if alone', async () => {
    const order: string[] = [];
    const shipped: number[] = [];
    const stream = { id: 's', source: 's', acknowledge: () => undefined };
    const mark = (offset: number) => ({ stream, offset, generation: 0 });
    // The first hand-over is slow: the dropped line's place must wait for it.
    const b = new Batcher({ maxEvents: 2, maxBytes: 1 << 20, timeoutMs: 30 }, async (_batch, count, marks) => {
      if (count > 0) await new Promise((r) => setTimeout(r, 50));
      shipped.push(count);
      for (const m of marks) order.push(`durable ${m.offset}`);
    });
    await b.add('{"a":1}', mark(1));
    await b.add('{"a":2}', mark(2)); // a full batch: handed on, slowly
    b.mark(mark(3)); // dropped: its place only
    await until(() => order.length === 2);
    expect(order).toEqual(['durable 2', 'durable 3']);
    expect(shipped).toEqual([2, 0]);
  });

  it("reuses a batch's memory only after the batch was handed on, so slow hand-overs see their own lines", async () => {
    const seen: string[][] = [];
    // Each hand-over reads its batch only after later batches have started gathering.
    const b = new Batcher({ maxEvents: 5, maxBytes: 1 << 20, timeoutMs: 10_000 }, async (batch) => {
      await new Promise((r) => setTimeout(r, 5));
      seen.push(splitLines(Buffer.concat(batch)));
    });
    for (let i = 0; i < 200; i++) await b.add(`{"i":${i}}`);
    await b.flush();
    expect(seen.flat()).toEqual(Array.from({ length: 200 }, (_, i) => `{"i":${i}}`));
  });

  it('compresses a large batch stage by stage into gzip members that decompress to the whole batch', async () => {
    const bodies: Buffer[] = [];
    const encoded: number[] = [];
    // A slow encoder: stages must not be filled again while they are still being read.
    const encode = async (stage: Buffer) => {
      encoded.push(stage.length);
      await new Promise((r) => setTimeout(r, 3));
      return gzipSync(stage);
    };
    const b = new Batcher(
      { maxEvents: 100_000, maxBytes: 3 * STAGE_BYTES, timeoutMs: 10_000 },
      async (batch) => {
        await new Promise((r) => setTimeout(r, 5));
        bodies.push(Buffer.concat(batch));
      },
      encode,
    );
    const lines = Array.from({ length: 40_000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(i % 300) }));
    for (const [i, l] of lines.entries()) await b.add(i % 2 ? l : Buffer.from(l)); // strings and bytes alike
    await b.flush();
    expect(encoded.length).toBeGreaterThan(bodies.length * 2); // several stages per batch
    expect(Math.max(...encoded)).toBeLessThanOrEqual(STAGE_BYTES);
    expect(bodies.flatMap((body) => splitLines(gunzipSync(body)))).toEqual(lines);
  });

  it('gives a line longer than a stage a part of its own, between the lines around it', async () => {
    const bodies: Buffer[][] = [];
    const b = new Batcher(
      { maxEvents: 100, maxBytes: 8 * STAGE_BYTES, timeoutMs: 10_000 },
      async (batch) => void bodies.push(batch),
      async (s) => gzipSync(s),
    );
    const long = JSON.stringify({ big: 'y'.repeat(STAGE_BYTES + 10) });
    await b.add('{"a":1}');
    await b.add(long);
    await b.add('{"b":2}');
    await b.flush();
    expect(bodies).toHaveLength(1);
    expect(bodies[0]!.length).toBe(3);
    expect(splitLines(gunzipSync(Buffer.concat(bodies[0]!)))).toEqual(['{"a":1}', long, '{"b":2}']);
  });

  it('keeps every line whole when two sources add at once, long lines and encoding waits included', async () => {
    const bodies: Buffer[] = [];
    const b = new Batcher(
      { maxEvents: 100_000, maxBytes: 4 * STAGE_BYTES, timeoutMs: 5 },
      async (batch) => void bodies.push(Buffer.concat(batch)),
      async (stage) => {
        await new Promise((r) => setTimeout(r, 2)); // slow: adds wait for an encoding slot
        return gzipSync(stage);
      },
    );
    const long = (i: number) => JSON.stringify({ a: i, big: 'L'.repeat(STAGE_BYTES + (i % 7)) });
    const short = (src: string, i: number) => JSON.stringify({ [src]: i, pad: 's'.repeat(i % 500) });
    const expected: string[] = [];
    const feed = async (src: string) => {
      for (let i = 0; i < 3000; i++) {
        const line = src === 'a' && i % 500 === 0 ? long(i) : short(src, i);
        expected.push(line);
        await b.add(line);
      }
    };
    await Promise.all([feed('a'), feed('b')]);
    await b.flush();
    const got = bodies.flatMap((body) => splitLines(gunzipSync(body)));
    expect(got.length).toBe(expected.length);
    expect([...got].sort()).toEqual([...expected].sort());
  });

  it('hands raw stages on whole when there is no encoder, and reuses them only after the hand-over', async () => {
    const seen: string[] = [];
    const b = new Batcher({ maxEvents: 100_000, maxBytes: 2 * STAGE_BYTES, timeoutMs: 10_000 }, async (batch) => {
      await new Promise((r) => setTimeout(r, 5));
      seen.push(...splitLines(Buffer.concat(batch)));
    });
    const lines = Array.from({ length: 30_000 }, (_, i) => `{"i":${i},"p":"${'z'.repeat(i % 200)}"}`);
    for (const l of lines) await b.add(l);
    await b.flush();
    expect(seen).toEqual(lines);
  });
});

describe('buffer pool', () => {
  it("hands a given-back buffer's memory out again, keeps the largest spares and leaves views alone", () => {
    const pool = new BufferPool(2);
    const a = pool.take(1000);
    a.fill(1);
    pool.give(a);
    const again = pool.take(600);
    expect(again.length).toBe(600);
    expect(again.buffer).toBe(a.buffer);
    expect(pool.take(600).buffer).not.toBe(a.buffer); // no spare left
    pool.give(Buffer.allocUnsafeSlow(4000).subarray(10)); // a view into other memory: not kept
    pool.give(Buffer.allocUnsafeSlow(10));
    pool.give(Buffer.allocUnsafeSlow(20));
    const big = Buffer.allocUnsafeSlow(5000);
    pool.give(big); // the pool is full: the 10-byte spare makes way
    expect(pool.take(4500).buffer).toBe(big.buffer);
    expect(pool.take(20).length).toBe(20);
    expect(pool.take(5).buffer.byteLength).toBe(5); // both spares taken: a fresh one

    // Made in steps, a buffer given back serves a slightly larger request next time.
    const stepped = new BufferPool(1, 256);
    const first = stepped.take(300);
    expect([first.length, first.byteOffset, first.buffer.byteLength]).toEqual([300, 0, 512]);
    stepped.give(first);
    expect(stepped.take(500).buffer).toBe(first.buffer);
  });

  it('reads batches into as many buffers as are in flight, and makes no more while they come back', async () => {
    const dir = tempDir('ferry-readpool-');
    const queue = await DiskQueue.open(dir, { maxBytes: 1 << 30, readers: 3 });
    cleanups.push(() => queue.close());
    // Batches of slightly different sizes, as compressed ones are.
    for (let i = 0; i < 12; i++) await queue.push(Buffer.alloc(100_000 + ((i * 7919) % 20_000), i));
    const seen = new Set<ArrayBufferLike>();
    let from = queue.ackedPosition;
    for (let round = 0; round < 4; round++) {
      const records = await queue.next(3, from);
      expect(records).toHaveLength(3);
      for (const r of records) seen.add(r.payload.buffer);
      from = records.at(-1)!.next;
      for (const r of records) queue.release(r.payload);
    }
    expect(seen.size).toBe(3);
  });
});

describe('batcher → disk queue → sink', () => {
  it('delivers every event once and in order through a receiver outage', async () => {
    const r = await receiver();
    r.state.failing = true;
    const queue = await DiskQueue.open(tempDir('ferry-q-'), { maxBytes: 64 * 1024 * 1024 });
    cleanups.push(() => queue.close());
    const delivery = new SendLoop(queue, sinkTo(r.url));
    delivery.start();
    cleanups.push(() => delivery.stop());
    const batcher = new Batcher(
      { maxEvents: 100, maxBytes: 1 << 20, timeoutMs: 20 },
      async (b) => void (await queue.push(b)),
    );
    for (let i = 0; i < 1000; i++) await batcher.add(JSON.stringify({ i }));
    await batcher.flush();
    await new Promise((res) => setTimeout(res, 200));
    expect(r.received).toEqual([]);
    expect(queue.depthRecords).toBe(10);
    r.state.failing = false;
    await until(() => r.received.length === 1000);
    expect(r.received).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    await until(() => queue.depthBytes === 0);
  });

  it('queues batches encoded as the sink wants them, each record saying its encoding, and delivers them as queued', async () => {
    const r = await receiver();
    r.state.failing = true;
    const dir = tempDir('ferry-q-');
    const delivery = await Delivery.open(
      {
        name: 'out',
        settings: {
          batch: { maxEvents: 500, maxBytes: 1 << 20, timeoutMs: 20 },
          queue: { maxBytes: 64 * 1024 * 1024, whenFull: 'block' },
          concurrency: 1,
          retry: { initialMs: 5, maxMs: 40, maxAttempts: 0 },
        },
        queueDir: dir,
        deadLetterPath: join(tempDir(), 'dl.ndjson'),
        onDurable: () => undefined,
        onError: (e) => {
          throw e;
        },
      },
      new AxiomSink({ name: 'out', url: r.url, dataset: 'logs', token: 't', compression: 'gzip' }),
    );
    cleanups.push(() => delivery.stop());
    let raw = 0;
    for (let i = 0; i < 2000; i++) {
      const line = JSON.stringify({ i, message: 'GET /api/v1/orders HTTP/1.1 200', host: 'web-1' });
      raw += line.length + 1;
      await delivery.accept({
        text: line,
        truncated: false,
        stream: { id: 's', source: 's', acknowledge: () => undefined },
        offset: i,
        generation: 0,
      });
    }
    await delivery.flush();
    expect(delivery.queue.depthRecords).toBe(4);
    expect(delivery.queue.depthBytes).toBeLessThan(raw / 4);
    const segment = readFileSync(
      join(
        dir,
        readdirSync(dir).find((f) => f.endsWith('.seg'))!,
      ),
    );
    // The record's first word: its tag (gzip's) in the high four bits, its length below.
    expect(segment.readUInt32LE(0) >>> 28).toBe(encodingTag('gzip'));
    expect([segment[8], segment[9]]).toEqual([0x1f, 0x8b]); // the payload is a gzip member
    r.state.failing = false;
    await until(() => r.received.length === 2000);
    expect(r.received).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  });

  it('delivers records queued before records said their encoding (tag 0), by their magic number', async () => {
    const r = await receiver();
    const dir = tempDir('ferry-q-');
    const lines = (from: number) => [0, 1].map((k) => JSON.stringify({ i: from + k })).join('\n');
    // A .log segment as versions before tags wrote it: [length][CRC-32][payload] per record.
    const record = (payload: Buffer) => {
      const header = Buffer.alloc(8);
      header.writeUInt32LE(payload.length, 0);
      header.writeUInt32LE(crc32(payload), 4);
      return [header, payload];
    };
    writeFileSync(
      join(dir, '0000000001.log'),
      Buffer.concat([...record(gzipSync(lines(0))), ...record(Buffer.from(lines(2)))]),
    );
    const queue = await DiskQueue.open(dir, { maxBytes: 1 << 20 });
    cleanups.push(() => queue.close());
    const loop = new SendLoop(queue, sinkTo(r.url));
    loop.start();
    cleanups.push(() => loop.stop());
    await until(() => r.received.length === 4);
    expect(r.received).toEqual([0, 1, 2, 3]);
  });

  it('keeps undelivered batches across a restart and delivers them when the receiver is back', async () => {
    const dir = tempDir('ferry-q-');
    let queue = await DiskQueue.open(dir, { maxBytes: 1 << 20 });
    const downSink = sinkTo('http://127.0.0.1:1');
    let delivery = new SendLoop(queue, downSink);
    delivery.start();
    for (let b = 0; b < 5; b++)
      await queue.push(Buffer.from([0, 1].map((k) => JSON.stringify({ i: b * 2 + k })).join('\n')));
    await downSink.close();
    await delivery.stop();
    await queue.close();

    const r = await receiver();
    queue = await DiskQueue.open(dir, { maxBytes: 1 << 20 });
    cleanups.push(() => queue.close());
    expect(queue.depthRecords).toBe(5);
    expect(queue.depthBytes).toBe(5 * (8 + '{"i":0}\n{"i":1}'.length));
    delivery = new SendLoop(queue, sinkTo(r.url));
    delivery.start();
    cleanups.push(() => delivery.stop());
    await until(() => r.received.length === 10);
    expect(r.received).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });

  it('when full, blocks the producer until deliveries free space; drop_newest refuses and counts instead', async () => {
    const r = await receiver();
    r.state.failing = true;
    const batch = Buffer.from(JSON.stringify({ i: 0, pad: 'x'.repeat(400) }));
    const queue = await DiskQueue.open(tempDir('ferry-q-'), { maxBytes: 2000, whenFull: 'block' });
    cleanups.push(() => queue.close());
    const delivery = new SendLoop(queue, sinkTo(r.url));
    delivery.start();
    cleanups.push(() => delivery.stop());
    for (let k = 0; k < 4; k++) expect(await queue.push(batch)).toBe(true);
    let pushed = false;
    const blocked = queue.push(batch).then(() => (pushed = true));
    await new Promise((res) => setTimeout(res, 150));
    expect(pushed).toBe(false);
    r.state.failing = false;
    await blocked;
    expect(pushed).toBe(true);

    const dropping = await DiskQueue.open(tempDir('ferry-q-'), { maxBytes: 2000, whenFull: 'drop_newest' });
    cleanups.push(() => dropping.close());
    const results = [];
    for (let k = 0; k < 6; k++) results.push(await dropping.push(batch));
    expect(results).toEqual([true, true, true, true, false, false]);
    expect(dropping.dropped).toBe(2);
  });
});

describe('delivery with several batches in flight', () => {
  it('acknowledges only the unbroken run of delivered batches, in order, whatever order they finish in', async () => {
    const queue = await DiskQueue.open(tempDir('ferry-q-'), { maxBytes: 64 * 1024 * 1024 });
    cleanups.push(() => queue.close());
    for (let i = 0; i < 4; i++) await queue.push(Buffer.from(`{"batch":${i}}`));
    const release = new Map<number, () => void>();
    const sent: number[] = [];
    const delivery = new SendLoop(
      queue,
      {
        send: (b: Buffer) =>
          new Promise<void>((r) => {
            const n = (JSON.parse(b.toString()) as { batch: number }).batch;
            sent.push(n);
            release.set(n, r);
          }),
      },
      () => undefined,
      3,
    );
    delivery.start();
    cleanups.push(() => delivery.stop());
    await until(() => sent.length === 3); // three in flight, the fourth waits for room
    expect(sent).toEqual([0, 1, 2]);
    release.get(2)!();
    release.get(1)!();
    await new Promise((r) => setTimeout(r, 50));
    expect(queue.depthRecords).toBe(4); // batch 0 still holds back 1 and 2
    release.get(0)!();
    await until(() => queue.depthRecords === 1);
    await until(() => sent.length === 4);
    release.get(3)!();
    await until(() => queue.depthRecords === 0);
    expect(delivery.batchesDelivered).toBe(4);
  });
});

describe('what a sink ships for each line', () => {
  const stream = { id: 's', source: 's', path: '/var/log/app.log', acknowledge: () => undefined };
  const base = { truncated: false, stream, offset: 1, generation: 0 };

  it('passthrough: a JSON line as its own bytes, anything else as {message}', () => {
    const raw = Buffer.from('{"a":1,"b":"x"}');
    expect(lineOf({ ...base, text: '', raw })).toBe(raw);
    expect(lineOf({ ...base, text: '', raw: Buffer.from('plain text') })).toBe('{"message":"plain text"}');
    expect(lineOf({ ...base, text: '{"a":1}' })).toBe('{"a":1}');
    expect(lineOf({ ...base, text: '{"cut', truncated: true })).toBe('{"message":"{\\"cut","truncated":true}');
  });

  it('an event that cannot be written as JSON goes as its line, with why, not lost', () => {
    // Nested past the depth JSON.stringify can recurse to, and changed (so its own text is gone).
    const text = `{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const deep = Event.of(JSON.parse(text) as Record<string, unknown>, text);
    deep.set('b', 1);
    const line = JSON.parse(lineOf({ ...base, text, event: deep }) as string) as Record<string, string>;
    expect(line.message).toBe(text);
    expect(line.ferry_error).toMatch(/stack/i);
  });

  it('a parsed JSON line keeps its text with enrichment spliced in, unless a field would be overwritten', async () => {
    const out: string[] = [];
    const enrich = new EnrichTransform(
      'e',
      { hostField: 'host.name', pathField: 'log.file.path', fields: { env: 'prod' } },
      async (e) => void out.push(lineOf(e) as string),
    );
    const parse = new ParseTransform('p', { parser: jsonParser, settings: undefined }, (e) => enrich.process(e));
    const text = '{"msg": "hi",  "n": 1.50}'; // spacing and number format kept as written
    await parse.process({ ...base, text });
    expect(out[0]).toBe(
      `{"msg": "hi",  "n": 1.50,"host.name":${JSON.stringify(hostname())},"log.file.path":"/var/log/app.log","env":"prod"}`,
    );
    await parse.process({ ...base, text: '{"env":"dev","n":1}' }); // has env: serialised again, env overwritten
    expect(JSON.parse(out[1]!)).toEqual({
      env: 'prod',
      n: 1,
      'host.name': hostname(),
      'log.file.path': '/var/log/app.log',
    });
    await parse.process({ ...base, text: 'not json' });
    expect(JSON.parse(out[2]!)).toEqual({
      message: 'not json',
      'host.name': hostname(),
      'log.file.path': '/var/log/app.log',
      env: 'prod',
    });
    for (const l of out) expect(() => JSON.parse(l)).not.toThrow();
  });
});
