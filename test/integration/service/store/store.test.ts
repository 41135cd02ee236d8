import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventStore, type StoreOptions } from '../../../../src/service/store/event-store.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { SharedLock, STORAGE_VERSION } from '../../../../src/service/store/db.js';
import { tempDir } from '../../../support/helpers.js';

const open: EventStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => undefined);
});

async function openStore(extra: Partial<StoreOptions> = {}, dataDir = tempDir()): Promise<EventStore> {
  const s = await EventStore.open({
    dataDir,
    memoryLimitBytes: 256 << 20,
    maxFieldsPerDataset: 50,
    defaultRetentionDays: 0,
    maxObjectBytes: 16 << 20,
    ...extra,
  });
  open.push(s);
  return s;
}

async function load(s: EventStore, ds: string, events: unknown[] | string, opts = {}) {
  const file = s.tempFile('ndjson');
  writeFileSync(file, typeof events === 'string' ? events : events.map((e) => JSON.stringify(e)).join('\n'));
  return s.ingestFile(ds, file, 'ndjson', opts);
}

function types(s: EventStore, ds: string): Record<string, string> {
  return Object.fromEntries(s.listFields(ds).map((f) => [f.name, f.type]));
}

describe('event store', () => {
  it('flattens nested objects into dotted fields and keeps arrays', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ geo: { city: 'Paris', pos: { lat: 48.8 } }, tags: ['a', { b: 1 }], 'geo.code': 'FR' }]);
    const [ev] = await s.readEvents('d');
    expect(ev).toMatchObject({ 'geo.city': 'Paris', 'geo.pos.lat': 48.8, tags: ['a', { b: 1 }], 'geo.code': 'FR' });
    expect(types(s, 'd')).toEqual({
      'geo.city': 'string',
      'geo.pos.lat': 'float',
      tags: 'array',
      'geo.code': 'string',
    });
  });

  it('keeps a scalar that arrives where earlier batches had an object, and vice versa', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ geo: { city: 'Paris' }, tag: 'x' }]);
    await load(s, 'd', [{ geo: 'plain', tag: { inner: 1 } }]);
    const [latest] = await s.readEvents('d');
    expect(latest).toMatchObject({ geo: 'plain', 'tag.inner': 1 });
    expect(latest!.tag).toBeUndefined();
    expect(types(s, 'd')).toEqual({ 'geo.city': 'string', geo: 'string', tag: 'string', 'tag.inner': 'integer' });
  });

  it('adds new fields as they appear, with no restart', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ a: 1 }]);
    await load(s, 'd', [{ a: 2, b: 'new', c: { d: true } }]);
    expect(types(s, 'd')).toEqual({ a: 'integer', b: 'string', 'c.d': 'boolean' });
    expect((await s.readEvents('d', { order: 'asc' })).map((e) => [e.a, e.b, e['c.d']])).toEqual([
      [1, undefined, undefined],
      [2, 'new', true],
    ]);
  });

  it('finds keys new to a known nested object, and to an object that was an array in some event', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ geo: { city: 'Paris' }, a: { 0: 'x' } }]);
    // {a:[5,6]} makes the known path /a/0 find an element that json_keys does not count; with the new key
    // of the next event the key counts under /a would balance.
    await load(s, 'd', [
      { geo: { city: 'Lyon', zip: '69001' }, a: [5, 6] },
      { geo: { city: 'Nice' }, a: { 0: 'y', fresh: 1 } },
    ]);
    expect(types(s, 'd')).toEqual({
      'geo.city': 'string',
      'geo.zip': 'string',
      'a.0': 'string',
      a: 'array',
      'a.fresh': 'integer',
    });
    const rows = (await s.readEvents('d', { order: 'asc' })).map((e) => [
      e['geo.city'],
      e['geo.zip'],
      e['a.0'],
      e.a,
      e['a.fresh'],
    ]);
    expect(rows).toEqual([
      ['Paris', undefined, 'x', undefined, undefined],
      ['Lyon', '69001', undefined, [5, 6], undefined],
      ['Nice', undefined, 'y', undefined, 1],
    ]);
  });

  it('keeps nested keys that differ only by case apart in a batch shaped like the last one', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    const event = { Geo: { City: 'A' }, geo: { city: 'b', CITY: 'C' }, n: 1 };
    await load(s, 'd', [event]);
    await load(s, 'd', [{ ...event, n: 2 }]);
    for (const ev of await s.readEvents('d'))
      expect(ev).toMatchObject({ 'Geo.City': 'A', 'geo.city': 'b', 'geo.CITY': 'C' });
  });

  it('keeps the timestamp field as a field of its own type, also when it is nested', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    for (let i = 0; i < 2; i++)
      await load(s, 'd', [{ ts: 1714557600000 + i, msg: 'a' }], { timestampField: 'ts', timestampFormat: 'unixms' });
    expect(types(s, 'd')).toEqual({ ts: 'integer', msg: 'string' });
    expect((await s.readEvents('d', { order: 'asc' })).map((e) => [e._time, e.ts])).toEqual([
      ['2024-05-01T10:00:00Z', 1714557600000],
      ['2024-05-01T10:00:00.001Z', 1714557600001],
    ]);
    await s.createDataset({ name: 'n', who: 't' });
    for (let i = 0; i < 2; i++)
      await load(s, 'n', [{ meta: { ts: `2024-05-01T10:00:0${i}Z`, id: i } }], { timestampField: 'meta.ts' });
    expect((await s.readEvents('n', { order: 'asc' })).map((e) => [e._time, e['meta.ts'], e['meta.id']])).toEqual([
      ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z', 0],
      ['2024-05-01T10:00:01Z', '2024-05-01T10:00:01Z', 1],
    ]);
  });

  it('widens a field seen with several types: integer+float → float, any other mix → string', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ n: 1, s: 200, b: true }]);
    await load(s, 'd', [{ n: 2.5, s: '404', b: 'yes' }]);
    expect(types(s, 'd')).toEqual({ n: 'float', s: 'string', b: 'string' });
    const rows = (await s.readEvents('d', { order: 'asc' })).map((e) => [e.n, e.s, e.b]);
    expect(rows).toEqual([
      [1, '200', 'true'],
      [2.5, '404', 'yes'],
    ]);
    // Within one batch, too.
    await s.createDataset({ name: 'e', who: 't' });
    await load(s, 'e', [{ v: 1 }, { v: [1, 2] }, { v: 'x' }]);
    expect(types(s, 'e')).toEqual({ v: 'string' });
    expect((await s.readEvents('e', { order: 'asc' })).map((e) => e.v)).toEqual(['1', '[1,2]', 'x']);
  });

  it('keeps fields that differ only by case apart, and renames reserved names', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ Level: 'INFO', level: 'info', _sysTime: 'mine', _rowID: 7, _source: 's' }]);
    const [ev] = await s.readEvents('d');
    expect(ev).toMatchObject({
      Level: 'INFO',
      level: 'info',
      _user_sysTime: 'mine',
      _user_rowID: 7,
      _user_source: 's',
    });
    expect(Date.parse(ev!._sysTime)).not.toBeNaN();
  });

  it('stores objects nested deeper than 100 levels as JSON text', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    let deep: unknown = { leaf: 1 };
    for (let i = 0; i < 105; i++) deep = { n: deep };
    const r = await load(s, 'd', [{ deep }]);
    expect(r).toMatchObject({ ingested: 1, failed: 0 });
    const names = s.listFields('d').map((f) => f.name);
    expect(names).toHaveLength(1);
    expect(names[0]!.split('.').length).toBe(100);
  });

  it('rejects a batch that would exceed the field limit, naming the dataset and the setting', async () => {
    const s = await openStore({ maxFieldsPerDataset: 5 });
    await s.createDataset({ name: 'd', who: 't' });
    const wide = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`f${i}`, i]));
    await expect(load(s, 'd', [wide])).rejects.toThrow(/dataset "d" would have 6 fields.*max_fields_per_dataset/);
    expect(await s.count('d')).toBe(0);
    expect(s.listFields('d')).toEqual([]);
  });

  it('keeps datasets, fields and events across a restart and continues the row ids', async () => {
    const dir = tempDir();
    const s = await openStore({}, dir);
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ a: 1 }, { a: 2 }]);
    await s.close();
    open.pop();
    const s2 = await openStore({}, dir);
    expect(s2.listDatasets().map((d) => d.name)).toEqual(['d']);
    await load(s2, 'd', [{ a: 3 }]);
    const evs = await s2.readEvents('d', { order: 'asc' });
    expect(evs.map((e) => e.a)).toEqual([1, 2, 3]);
    expect(new Set(evs.map((e) => e._rowId)).size).toBe(3);
  });

  it('enforces retention by the injected clock: per dataset, or the default when the dataset has none', async () => {
    const day = 86_400_000_000_000n;
    let now = 100n * day;
    const s = await openStore({ now: () => now, defaultRetentionDays: 30 });
    await s.createDataset({ name: 'short', who: 't', retentionDays: 2, useRetentionPeriod: true });
    await s.createDataset({ name: 'default', who: 't' });
    const at = (d: bigint) => new Date(Number((d * day) / 1_000_000n)).toISOString();
    for (const ds of ['short', 'default'])
      await load(s, ds, [
        { _time: at(99n), k: 'recent' },
        { _time: at(95n), k: 'older' },
        { _time: at(60n), k: 'ancient' },
      ]);
    expect(await s.enforceRetention()).toEqual({ short: 2, default: 1 });
    expect((await s.readEvents('short')).map((e) => e.k)).toEqual(['recent']);
    expect((await s.readEvents('default')).map((e) => e.k).sort()).toEqual(['older', 'recent']);
    now += 10n * day;
    await s.enforceRetention();
    expect(await s.count('default')).toBe(2);
    now += 30n * day;
    await s.enforceRetention();
    expect(await s.count('default')).toBe(0);
  });

  it('reads by inclusive time range, in either order, with a limit', async () => {
    const s = await openStore();
    await s.createDataset({ name: 'd', who: 't' });
    await load(
      s,
      'd',
      [1, 2, 3, 4].map((i) => ({ _time: `2024-01-01T00:00:0${i}Z`, i })),
    );
    const ns = (sec: number) => BigInt(Date.parse(`2024-01-01T00:00:0${sec}Z`)) * 1_000_000n;
    expect((await s.readEvents('d', { startNs: ns(2), endNs: ns(3), order: 'asc' })).map((e) => e.i)).toEqual([2, 3]);
    expect((await s.readEvents('d', { limit: 2 })).map((e) => e.i)).toEqual([4, 3]);
  });
});

describe('concurrency and checkpoints', () => {
  it('keeps every event and one column per field when concurrent batches change the schema', async () => {
    const s = await openStore({ maxFieldsPerDataset: 500 });
    await s.createDataset({ name: 'd', who: 't' });
    // Eight batches at once: each adds its own fields, all share `n` (integer in some, float in others)
    // and `tag` (a string in some, a number in others), so plans race on adds and widenings.
    const batches = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 200 }, (_, i) => ({
        b,
        i,
        [`only_${b}`]: i,
        n: b % 2 ? i + 0.5 : i,
        tag: b % 3 ? `t${i}` : i,
        nested: { [`k${b}`]: true },
      })),
    );
    const results = await Promise.all(batches.map((events) => load(s, 'd', events)));
    expect(results.map((r) => r.ingested)).toEqual(Array(8).fill(200));
    expect(await s.count('d')).toBe(1600);
    const t = types(s, 'd');
    expect(t.n).toBe('float');
    expect(t.tag).toBe('string');
    for (let b = 0; b < 8; b++) {
      expect(t[`only_${b}`]).toBe('integer');
      expect(t[`nested.k${b}`]).toBe('boolean');
    }
    const columns = s.listFields('d').map((f) => f.column);
    expect(new Set(columns).size).toBe(columns.length);
    const sample = (await s.readEvents('d')).find((e) => e.b === 5 && e.i === 7)!;
    expect(sample).toMatchObject({ only_5: 7, n: 7.5, tag: 't7', 'nested.k5': true });
    expect(new Set((await s.readEvents('d')).map((e) => e._rowId)).size).toBe(1600);
  });

  it('folds the WAL into the database file once it passes the checkpoint threshold', async () => {
    const dir = tempDir();
    const s = await openStore({ checkpointThresholdBytes: 64 * 1024 }, dir);
    await s.createDataset({ name: 'd', who: 't' });
    const { existsSync, statSync } = await import('node:fs');
    const db = join(dir, 'ferry.duckdb');
    const wal = join(dir, 'ferry.duckdb.wal');
    await s.db.run('CHECKPOINT');
    const before = statSync(db).size;
    // 1,300 of these events leave ~97 KB of WAL: past the 64 KB threshold, short of DuckDB's own safety-net
    // checkpoint at twice it, so only the store's checkpoint can fold them.
    await load(
      s,
      'd',
      Array.from({ length: 1300 }, (_, i) => ({ i, msg: `message number ${i} with some padding text` })),
    );
    await s.idle();
    // The rows went from the WAL into the database file: the file grew and the WAL is below the threshold.
    expect(statSync(db).size).toBeGreaterThan(before);
    expect(existsSync(wal) ? statSync(wal).size : 0).toBeLessThan(64 * 1024);
    expect(await s.count('d')).toBe(1300);
  });
});

describe('storage format', () => {
  const storageVersion = async (s: EventStore) =>
    String(
      (await s.db.all(`SELECT tags::VARCHAR AS t FROM duckdb_databases() WHERE database_name = current_database()`))[0]!
        .t,
    );

  it('writes new data dirs in the current format, and keeps using one written in the older format', async () => {
    const fresh = await openStore();
    expect(await storageVersion(fresh)).toContain(STORAGE_VERSION);

    // A data dir from before: DuckDB's default, the v0.10-compatible format.
    const dir = tempDir();
    const old = await DuckDBInstance.create(join(dir, 'ferry.duckdb'));
    const c = await old.connect();
    await c.run('CREATE TABLE earlier (x INTEGER)');
    c.closeSync();
    old.closeSync();
    let s = await openStore({}, dir);
    expect(await storageVersion(s)).not.toContain(STORAGE_VERSION);
    await s.createDataset({ name: 'd', who: 't' });
    await load(s, 'd', [{ a: 1 }, { a: 2 }]);
    await s.close();
    s = await openStore({}, dir);
    expect(await s.count('d')).toBe(2);
  });
});

describe('config file paths', () => {
  it('writes the database inside the data dir', async () => {
    const dir = tempDir();
    const s = await openStore({}, dir);
    await s.createDataset({ name: 'd', who: 't' });
    expect(s.tempFile('x').startsWith(join(dir, 'tmp'))).toBe(true);
  });
});

describe('ingest planning', () => {
  it('needs one discovery round for a nested batch shaped like the last one, and lists keys only where counts differ', async () => {
    const { BatchShape } = await import('../../../../src/service/store/ingest-plan.js');
    const opts = { labels: {}, mapFields: new Set<string>() };
    const known = { objects: new Set(['']), leaves: new Set<string>() };
    // First batch: discovers /a (string) and /geo (object) with /geo/city.
    const first = new BatchShape(known, opts);
    const q1 = first.firstQuery();
    first.absorb(q1, [{ jt: 'OBJECT', ks: [['a', 'geo']], n: 1 }], true);
    const q2 = first.nextQuery()!;
    expect(q2.leaves).toEqual(['/a', '/geo']);
    first.absorb(q2, [{ jt: 'OBJECT', ks: [[]], n: 1, t0: 1, t1: 32 }], false);
    const q3 = first.nextQuery()!;
    expect(q3.objects).toEqual(['/geo']);
    first.absorb(q3, [{ jt: 'OBJECT', ks: [['city']], n: 1 }], false);
    const q4 = first.nextQuery()!;
    first.absorb(q4, [{ jt: 'OBJECT', ks: [[]], n: 1, t0: 1 }], false);
    expect(first.nextQuery()).toBeUndefined();
    first.remember(known);

    // Same shape again: one round, which counts keys instead of listing them.
    const second = new BatchShape(known, opts);
    const r1 = second.firstQuery();
    expect(r1).toMatchObject({ mode: 'counts', objects: ['', '/geo'] });
    const bits = Object.fromEntries(r1.leaves.map((l, i) => [`t${i}`, l === '/geo' ? 32 : 1]));
    second.absorb(r1, [{ jt: 'OBJECT', n: 5, ...bits, k0: 10, c0: 10, k1: 5, c1: 5 }], true);
    expect(second.nextQuery()).toBeUndefined();
    expect([...second.leaves.keys()].sort()).toEqual(['/a', '/geo/city']);

    // A key count above the known children's sends that object, and only it, to a keys round.
    const third = new BatchShape(known, opts);
    const s1 = third.firstQuery();
    third.absorb(s1, [{ jt: 'OBJECT', n: 5, ...bits, k0: 10, c0: 10, k1: 6, c1: 5 }], true);
    expect(third.nextQuery()).toMatchObject({ mode: 'keys', objects: ['/geo'], leaves: [] });
  });
});

describe('SharedLock', () => {
  const tick = () => new Promise((r) => setImmediate(r));

  it('runs shared holders together, an exclusive one alone, and lets a waiting exclusive holder go first', async () => {
    const lock = new SharedLock();
    const log: string[] = [];
    let releaseA!: () => void;
    let releaseB!: () => void;
    const a = lock.shared(
      () =>
        new Promise<void>((r) => {
          log.push('a');
          releaseA = r;
        }),
    );
    const b = lock.shared(
      () =>
        new Promise<void>((r) => {
          log.push('b');
          releaseB = r;
        }),
    );
    await tick();
    expect(log).toEqual(['a', 'b']); // both inside at once
    const w = lock.run(async () => {
      log.push('w');
    });
    const c = lock.shared(async () => {
      log.push('c');
    }); // arrives after the writer: waits behind it
    await tick();
    expect(log).toEqual(['a', 'b']);
    releaseA();
    await tick();
    expect(log).toEqual(['a', 'b']); // b still holds it
    releaseB();
    await Promise.all([a, b, w, c]);
    expect(log).toEqual(['a', 'b', 'w', 'c']);
  });

  it('releases the lock when the holder throws', async () => {
    const lock = new SharedLock();
    await expect(
      lock.run(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(
      lock.shared(async () => {
        throw new Error('bang');
      }),
    ).rejects.toThrow('bang');
    expect(await lock.run(async () => 'free')).toBe('free');
  });

  it('idle() resolves once no holder is left and no one waits, and at once when free', async () => {
    const lock = new SharedLock();
    await lock.idle();
    const releaseA = await lock.enter(false);
    const releaseB = await lock.enter(false);
    let idle = false;
    void lock.idle().then(() => (idle = true));
    releaseA();
    await tick();
    expect(idle).toBe(false); // b still holds it
    const w = lock.run(async () => undefined); // waits for b
    releaseB();
    await tick();
    await w;
    await tick();
    expect(idle).toBe(true); // after the writer it let in
  });

  it("enter()'s release lets go once, however often it is called", async () => {
    const lock = new SharedLock();
    const releaseA = await lock.enter(false);
    const releaseB = await lock.enter(false);
    releaseA();
    releaseA(); // had it counted twice, b's hold would be lost and the writer let in
    let written = false;
    const w = lock.run(async () => {
      written = true;
    });
    await tick();
    expect(written).toBe(false);
    releaseB();
    await w;
    expect(written).toBe(true);
  });
});
