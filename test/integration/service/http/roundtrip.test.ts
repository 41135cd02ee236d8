import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  token = await svc.apiToken();
});
afterAll(async () => svc.stop());

/** Small seeded PRNG so a failure reproduces. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Keys that stress SQL quoting, JSON-pointer escaping and case handling.
const KEYS = [
  'plain',
  'Plain',
  'with space',
  'quote"d',
  "apo'strophe",
  'back\\slash',
  'sl/ash',
  'til~de',
  '~1',
  'ü-ñíçødé',
  '😀',
  'semi;colon',
  'x'.repeat(150),
];

/** Field type decided by the key, so every field has one type and the expectation needs no widening. */
function valueFor(key: string, r: () => number): unknown {
  const kind = key.length % 4;
  if (kind === 0) return `v${Math.floor(r() * 1000)}"\\/\n`;
  if (kind === 1) return Math.floor(r() * 1e6) - 5e5;
  if (kind === 2) return Math.round(r() * 1e6) / 1000 + 0.5;
  return r() < 0.5;
}

function randomEvent(r: () => number, depth = 0): Record<string, unknown> {
  const ev: Record<string, unknown> = {};
  for (const key of KEYS) {
    if (r() < 0.4) continue;
    ev[key] = depth < 1 && r() < 0.2 ? randomEvent(r, depth + 1) : valueFor(key, r);
  }
  return ev;
}

/** The reference flattening: nested objects become dotted names; what is left compares one to one. */
function flatten(ev: Record<string, unknown>, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  for (const [k, v] of Object.entries(ev)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) flatten(v as Record<string, unknown>, name, out);
    else out[name] = v;
  }
  return out;
}

describe('ingest round trip', () => {
  it('stores every field of events with hostile keys exactly as a flattening reference predicts', async () => {
    await svc.createDataset('roundtrip');
    const r = rng(1234);
    const events = Array.from({ length: 300 }, (_, i) => ({ id: i, ...randomEvent(r) }));
    const body = events.map((e) => JSON.stringify(e)).join('\n');
    const res = await svc.call('POST', '/v1/ingest/roundtrip', gzipSync(body), token, {
      'content-type': 'application/x-ndjson',
      'content-encoding': 'gzip',
    });
    const result = await res.json();
    expect(res.status, JSON.stringify(result)).toBe(200);
    expect(result).toMatchObject({ ingested: 300, failed: 0 });
    const stored = new Map((await svc.store.readEvents('roundtrip')).map((e) => [e.id as number, e]));
    for (const ev of events) {
      const got = { ...stored.get(ev.id)! } as Record<string, unknown>;
      delete got._time;
      delete got._sysTime;
      delete got._rowId;
      expect(got, `event ${ev.id}`).toEqual(flatten(ev));
    }
  });

  it('survives garbage bodies of every content type and keeps answering', async () => {
    await svc.createDataset('garbage');
    const r = rng(99);
    for (let i = 0; i < 40; i++) {
      const bytes = randomBytes(Math.floor(r() * 4000));
      const type = ['application/json', 'application/x-ndjson', 'text/csv'][i % 3]!;
      const encoding = i % 5 === 0 ? 'gzip' : '';
      const res = await svc.call('POST', '/v1/ingest/garbage', bytes, token, {
        'content-type': type,
        'content-encoding': encoding,
      });
      const json = (await res.json()) as Record<string, unknown>;
      expect([200, 400], `${type} ${encoding} ${JSON.stringify(json)}`).toContain(res.status);
      if (res.status === 400) expect(json.code).toBe(400);
      else expect(typeof json.ingested).toBe('number');
    }
    const ok = await svc.call('POST', '/v1/ingest/garbage', '{"still":"alive"}', token, {
      'content-type': 'application/x-ndjson',
    });
    expect(await ok.json()).toMatchObject({ ingested: 1 });
  });
});
