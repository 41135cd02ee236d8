/**
 * The pure parts of route, sample, throttle and dedupe: every read output of a route gets exactly one
 * envelope of its own per line (the event, a copy, or its place), whatever the conditions; throttle's
 * buckets and dedupe's memory keep their bounds; a key is read from flat or nested fields; the sample hash
 * spreads keys evenly.
 */
import { describe, expect, it } from 'vitest';
import { Event } from '../../../../src/agent/event.js';
import { Buckets } from '../../../../src/agent/transforms/throttle.js';
import { DedupeTransform, SeenWithin } from '../../../../src/agent/transforms/dedupe.js';
import { fieldReader } from '../../../../src/agent/transforms/field-path.js';
import { RouteTransform, UNMATCHED } from '../../../../src/agent/transforms/route.js';
import { hashOf } from '../../../../src/agent/transforms/sample.js';
import { newTransformCounters, type Envelope } from '../../../../src/agent/transforms/transform.js';

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const envelope = (fields: Record<string, unknown>, i: number): Envelope => ({
  text: JSON.stringify(fields),
  truncated: false,
  stream: { id: 'f', source: 's', acknowledge: () => undefined },
  offset: i + 1,
  generation: 0,
  event: Event.of(fields, JSON.stringify(fields)),
});

describe('route', () => {
  it('hands every read output one envelope of its own per line, the event where its condition holds (seeded)', async () => {
    const seed = Number(process.env.FERRY_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rnd = seeded(seed);
    for (let round = 0; round < 30; round++) {
      const names = ['a', 'b', 'c'].slice(0, 1 + Math.floor(rnd() * 3));
      const limits = names.map(() => Math.floor(rnd() * 10));
      const read = new Set([...names, UNMATCHED].filter(() => rnd() < 0.7));
      const got = new Map<string, Envelope[]>();
      const t = new RouteTransform('r', Object.fromEntries(names.map((n, i) => [n, `x < ${limits[i]}`])), {
        isRead: (o) => read.has(o),
        output: (o) => async (e) => void got.set(o, [...(got.get(o) ?? []), e]),
        log: { warn: () => undefined },
      });
      const lines = Array.from({ length: 40 }, (_, i) =>
        rnd() < 0.1
          ? { ...envelope({}, i), event: undefined, dropped: true as const }
          : envelope({ x: Math.floor(rnd() * 10) }, i),
      );
      for (const l of lines) await t.process(l);
      const context = `seed ${seed}, round ${round}: routes ${names.map((n, i) => `${n}<${limits[i]}`)} read ${[...read]}`;
      for (const out of read) {
        const list = got.get(out) ?? [];
        expect(list, context).toHaveLength(lines.length);
        list.forEach((e, i) => {
          const line = lines[i]!;
          const x = line.event?.get('x') as number | undefined;
          const holds =
            x !== undefined && (out === UNMATCHED ? limits.every((l) => x >= l) : x < limits[names.indexOf(out)]!);
          expect(e.offset, context).toBe(line.offset);
          expect(e.dropped === true, `${context}: line ${i} on ${out}`).toBe(!holds);
          if (holds) expect(e.event?.get('x'), context).toBe(x);
        });
      }
      // No two outputs share an envelope or an event: each may change its own.
      for (let i = 0; i < lines.length; i++) {
        const envs = [...read].map((o) => got.get(o)![i]!);
        expect(new Set(envs).size, context).toBe(envs.length);
        const events = envs.flatMap((e) => (e.event ? [e.event] : []));
        expect(new Set(events).size, context).toBe(events.length);
      }
    }
  });
});

describe('route and filters under overlapping calls and hostile events', () => {
  it('routes each event by its own conditions while calls overlap at every await', async () => {
    const got = new Map<string, unknown[]>();
    const t = new RouteTransform(
      'r',
      { a: 'x == 1', b: 'x == 2', c: 'x == 3' },
      {
        isRead: () => true,
        // Every output yields to the loop, so the next call runs before this one has emitted to all.
        output: (o) => async (e) => {
          await new Promise((r) => setTimeout(r, Math.random() * 3));
          if (!e.dropped) got.set(o, [...(got.get(o) ?? []), e.event!.get('x')]);
        },
        log: { warn: () => undefined },
      },
    );
    const xs = Array.from({ length: 60 }, (_, i) => (i % 4) + 1);
    await Promise.all(xs.map((x, i) => t.process(envelope({ x }, i))));
    const count = (x: number) => xs.filter((v) => v === x).length;
    expect(got.get('a')).toEqual(Array(count(1)).fill(1));
    expect(got.get('b')).toEqual(Array(count(2)).fill(2));
    expect(got.get('c')).toEqual(Array(count(3)).fill(3));
    expect(got.get(UNMATCHED)).toEqual(Array(count(4)).fill(4));
  });

  it('passes on, and counts, an event a filter cannot judge (a key nested past the stack)', async () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 20_000; i++) deep = { a: deep };
    const out: Envelope[] = [];
    const counters = newTransformCounters();
    const t = new DedupeTransform(
      'd',
      { fields: ['k'], windowMs: 1000, maxEntries: 10 },
      async (e) => void out.push(e),
      counters,
    );
    await t.process({ ...envelope({}, 0), event: Event.of({ k: deep }) });
    expect(out).toHaveLength(1);
    expect(out[0]!.dropped).toBeUndefined();
    expect(counters.errors).toBe(1);
  });
});

describe('throttle buckets', () => {
  it('let a second of events through at once per key, then the rate, and stay within max_keys', () => {
    const b = new Buckets(5, 3);
    const passed = (key: string, now: number, n: number) =>
      Array.from({ length: n }, () => b.take(key, now)).filter(Boolean).length;
    expect(passed('a', 0, 10)).toBe(5);
    expect(passed('a', 200, 10)).toBe(1);
    expect(passed('b', 200, 10)).toBe(5);
    expect(passed('a', 1200, 10)).toBe(5);
    // A third key fits; at the bound, b's bucket is full again and forgotten, so d gets its own.
    expect(passed('c', 1200, 1)).toBe(1);
    expect(b.size).toBe(3);
    expect(passed('d', 1300, 10)).toBe(5);
    expect(b.size).toBe(3);
    // No bucket is full: keys past the bound share one budget.
    expect(b.ready('e', 1300)).toBe(true);
    expect(passed('e', 1300, 3)).toBe(3);
    expect(passed('g', 1300, 10)).toBe(2);
    // Asking takes nothing: the shared budget is spent, and a new key past the bound has none either.
    expect(b.ready('h', 1300)).toBe(false);
    expect(b.size).toBe(3);
    // Once buckets are full again they are forgotten, and a new key gets its own.
    expect(passed('f', 5000, 10)).toBe(5);
    expect(b.size).toBe(1);
  });
});

describe('dedupe memory', () => {
  it('drops repeats within the window only, forgets the oldest past max_entries, and keeps long keys as digests', () => {
    const s = new SeenWithin(1000, 3);
    expect(s.repeated('x', 0)).toBe(false);
    expect(s.repeated('x', 999)).toBe(true);
    // A repeat does not extend the window.
    expect(s.repeated('x', 1000)).toBe(false);
    for (const k of ['a', 'b', 'c', 'd']) expect(s.repeated(k, 1100)).toBe(false);
    expect(s.size).toBe(3);
    // x was the oldest: forgotten, so it passes again.
    expect(s.repeated('x', 1200)).toBe(false);
    expect(s.repeated('d', 1200)).toBe(true);
    const long = 'm'.repeat(10_000);
    expect(s.repeated(long, 1300)).toBe(false);
    expect(s.repeated(long, 1400)).toBe(true);
    expect(s.repeated(`${long}!`, 1400)).toBe(false);
    // Entries past their window leave as new ones come.
    expect(s.repeated('z', 9000)).toBe(false);
    expect(s.size).toBe(1);
  });
});

describe('field keys and the sample hash', () => {
  it('reads a dotted name as a field of that name, else as a path through objects', () => {
    const host = fieldReader('host.name');
    expect(host({ 'host.name': 'a', host: { name: 'b' } })).toBe('a');
    expect(host({ host: { name: 'b' } })).toBe('b');
    expect(host({ host: 'x' })).toBeUndefined();
    expect(host({ host: ['name'] })).toBeUndefined();
    expect(fieldReader('constructor')({})).toBeUndefined();
    expect(fieldReader('a.toString')({ a: {} })).toBeUndefined();
  });

  it('spreads keys evenly over a rate, the same on every run', () => {
    expect(hashOf('trace-1')).toBe(hashOf('trace-1'));
    const rate = 10;
    const kept = Array.from({ length: 100_000 }, (_, i) => hashOf(`t${i}`) % rate === 0).filter(Boolean).length;
    expect(kept).toBeGreaterThan(9_500);
    expect(kept).toBeLessThan(10_500);
    // Keys differing in their last character only are not kept together.
    const similar = Array.from({ length: 1000 }, (_, i) => hashOf(`req-${String(i).padStart(4, '0')}`) % 2);
    expect(similar.filter((b) => b === 0).length).toBeGreaterThan(400);
    expect(similar.filter((b) => b === 0).length).toBeLessThan(600);
  });
});
