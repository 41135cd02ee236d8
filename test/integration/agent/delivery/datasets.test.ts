/**
 * Events that carry their own dataset keep it through batching and the disk queue, across a restart, and
 * a sink sends each batch to its dataset: one request per dataset, in the order the lines came.
 */
import { mkdirSync, rmdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { Batcher } from '../../../../src/agent/delivery/batcher.js';
import { Delivery } from '../../../../src/agent/delivery/delivery.js';
import { AxiomSink } from '../../../../src/agent/sinks/axiom.js';
import type { Envelope } from '../../../../src/agent/transforms/transform.js';
import { tempDir } from '../../../support/helpers.js';

const servers: Server[] = [];
const deliveries: Delivery[] = [];
afterEach(async () => {
  for (const d of deliveries.splice(0)) await d.stop();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A receiver that keeps, per request, the dataset in the path and the events. */
async function receiver(): Promise<{ url: string; requests: { dataset: string; ids: number[] }[]; down: boolean }> {
  const state = { url: '', requests: [] as { dataset: string; ids: number[] }[], down: false };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (state.down) {
        res.writeHead(503).end('{"message":"down"}');
        return;
      }
      const body = gunzipSync(Buffer.concat(chunks)).toString();
      const ids = body.split('\n').map((l) => (JSON.parse(l) as { id: number }).id);
      state.requests.push({ dataset: decodeURIComponent(req.url!.split('/')[3]!.split('?')[0]!), ids });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ingested: ids.length, failed: 0, failures: [] }));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return state;
}

async function open(
  url: string,
  queueDir: string,
  report: (level: string, msg: string) => void = () => undefined,
): Promise<Delivery> {
  const d = await Delivery.open(
    {
      name: 'out',
      settings: {
        batch: { maxEvents: 1000, maxBytes: 1 << 20, timeoutMs: 20 },
        queue: { maxBytes: 64 << 20, whenFull: 'block' },
        concurrency: 1,
        retry: { initialMs: 5, maxMs: 20, maxAttempts: 0 },
      },
      queueDir,
      deadLetterPath: join(tempDir(), 'dl.ndjson'),
      onDurable: () => undefined,
      onError: () => undefined,
      report,
    },
    new AxiomSink({ name: 'out', url, dataset: 'fallback', token: 't', compression: 'gzip' }),
  );
  deliveries.push(d);
  return d;
}

const stream = { id: 's', source: 's', acknowledge: () => undefined };
const envelope = (id: number, dataset?: string): Envelope => ({
  text: JSON.stringify({ id }),
  truncated: false,
  stream,
  offset: id,
  generation: 0,
  ...(dataset ? { dataset } : {}),
});

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('events with their own dataset', () => {
  it('cut a batch where the dataset changes, so batches keep the order of the lines', async () => {
    const batches: { dataset?: string; n: number }[] = [];
    const b = new Batcher({ maxEvents: 100, maxBytes: 1 << 20, timeoutMs: 1000 }, async (_parts, n, _m, to) => {
      batches.push({ dataset: to?.dataset, n });
    });
    for (const [i, d] of ['a', 'a', 'b', undefined, undefined, 'a'].entries()) await b.add(`{"id":${i}}`, undefined, d);
    await b.flush();
    expect(batches).toEqual([
      { dataset: 'a', n: 2 },
      { dataset: 'b', n: 1 },
      { dataset: undefined, n: 2 },
      { dataset: 'a', n: 1 },
    ]);
  });

  it('go to their dataset through the queue, also after a restart, and the rest to the sink’s', async () => {
    const r = await receiver();
    const queueDir = tempDir('ferry-q-');
    r.down = true;
    let d = await open(r.url, queueDir);
    const plan = Array.from({ length: 30 }, (_, i) => (i % 10 < 4 ? 'logs-a' : i % 10 < 7 ? undefined : 'logs-b'));
    for (const [i, ds] of plan.entries()) await d.accept(envelope(i, ds));
    await d.flush();
    // The receiver is down: the batches wait in the queue, and the agent stops.
    await d.stop();
    deliveries.splice(deliveries.indexOf(d), 1);
    r.down = false;
    d = await open(r.url, queueDir);
    await until(() => r.requests.reduce((n, q) => n + q.ids.length, 0) === 30);
    const got = new Map<string, number[]>();
    for (const q of r.requests) got.set(q.dataset, [...(got.get(q.dataset) ?? []), ...q.ids]);
    expect(Object.fromEntries(got)).toEqual({
      'logs-a': plan.flatMap((p, i) => (p === 'logs-a' ? [i] : [])),
      fallback: plan.flatMap((p, i) => (p === undefined ? [i] : [])),
      'logs-b': plan.flatMap((p, i) => (p === 'logs-b' ? [i] : [])),
    });
    // One dataset per request, in the order of the lines.
    expect(r.requests.flatMap((q) => q.ids)).toEqual(plan.map((_, i) => i));
  });

  it('says so when the queue cannot record a delivery, and goes on delivering', async () => {
    const r = await receiver();
    const queueDir = tempDir('ferry-q-');
    const said: string[] = [];
    const d = await open(r.url, queueDir, (level, msg) => said.push(`${level}: ${msg}`));
    const delivered = () => r.requests.reduce((n, q) => n + q.ids.length, 0);
    for (let i = 0; i < 5; i++) await d.accept(envelope(i));
    await d.flush();
    await until(() => delivered() === 5);
    // The acknowledgement can no longer be written: a directory stands where its file is written first
    // (once the write of the last acknowledgement, which may still hold that name, has renamed it away).
    await until(() => {
      try {
        mkdirSync(join(queueDir, 'ack.json.tmp'));
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw e;
      }
    });
    for (let i = 5; i < 10; i++) await d.accept(envelope(i));
    await d.flush();
    await until(() => delivered() === 10);
    await until(() => said.some((m) => m.includes('could not be recorded')));
    expect(said.find((m) => m.includes('could not be recorded'))).toMatch(
      new RegExp(
        `^error: sink out: delivered batches could not be recorded in its queue at ${queueDir} \\(EISDIR.*\\); they are sent again after a restart$`,
      ),
    );
    for (let i = 10; i < 15; i++) await d.accept(envelope(i));
    await d.flush();
    await until(() => delivered() === 15);
    expect(r.requests.flatMap((q) => q.ids)).toEqual(Array.from({ length: 15 }, (_, i) => i));
    // Said once while it lasts, not once a batch; the health says why, and counts each failure.
    expect(r.requests.length).toBeGreaterThan(2);
    expect(said.filter((m) => m.includes('could not be recorded'))).toHaveLength(1);
    expect(d.health.queueError).toMatch(/EISDIR/);
    expect(d.health.queueAckFailures).toBeGreaterThanOrEqual(2);
    // The disk is fixed: the next record succeeds, and that is said once.
    rmdirSync(join(queueDir, 'ack.json.tmp'));
    for (let i = 15; i < 20; i++) await d.accept(envelope(i));
    await d.flush();
    await until(() => said.some((m) => m.includes('records deliveries again')));
    expect(d.health.queueError).toBeUndefined();
    expect(said.filter((m) => m.includes('records deliveries again'))).toEqual([
      'info: sink out: its queue records deliveries again',
    ]);
  });
});
