/**
 * Values come back as they were sent: strings with a leading U+FEFF, integers past int64 and past 2^53,
 * and the rule where two inputs name one field (documented in the README, the same for JSON, NDJSON and
 * CSV, and counted in the ingest result as fieldCollisions).
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalSink } from '../../../../src/agent/sinks/local.js';
import { startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  token = await svc.apiToken({ '*': { ingest: ['create'], query: ['read'] } });
});
afterAll(async () => svc.stop());

let n = 0;
async function dataset(): Promise<string> {
  const name = `values-${++n}`;
  await svc.createDataset(name);
  return name;
}

async function ingest(ds: string, body: string, type = 'application/x-ndjson', headers: Record<string, string> = {}) {
  const r = await svc.call('POST', `/v1/ingest/${ds}`, body, token, { 'content-type': type, ...headers });
  const json = (await r.json()) as Record<string, unknown>;
  expect(r.status, JSON.stringify(json)).toBe(200);
  return json;
}

/** The tabular answer's raw text and its rows. */
async function query(apl: string): Promise<{ text: string; rows: Record<string, unknown>[] }> {
  const r = await svc.call('POST', '/v1/query/_apl?format=tabular', {
    apl,
    startTime: '2000-01-01T00:00:00Z',
    endTime: '2100-01-01T00:00:00Z',
  });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  const t = (JSON.parse(text) as { tables: { fields: { name: string }[]; columns: unknown[][] }[] }).tables[0]!;
  const rows = (t.columns[0] ?? []).map((_, i) =>
    Object.fromEntries(t.fields.map((f, j) => [f.name, t.columns[j]![i]])),
  );
  return { text, rows };
}

describe('values come back as they were sent', () => {
  it('keeps a leading U+FEFF in values and keys: a key "\\ufeffa" beside "a" is a field of its own', async () => {
    const ds = await dataset();
    await ingest(ds, JSON.stringify({ s: '\ufeffhello', '\ufeffa': 1, a: 2 }));
    const { rows } = await query(`['${ds}'] | extend n = strlen(s) | project s, n, a, ['\ufeffa']`);
    expect(rows).toEqual([{ s: '\ufeffhello', n: 6, a: 2, '\ufeffa': 1 }]);
    const fields = (await (await svc.call('GET', `/v2/datasets/${ds}/fields`)).json()) as { name: string }[];
    expect(fields.map((f) => f.name)).toEqual(expect.arrayContaining(['a', '\ufeffa', 's']));
  });

  it('stores integers past int64 as floats, never null, beside ordinary integers of the same field', async () => {
    const ds = await dataset();
    await ingest(ds, '{"id":1,"k":"small"}');
    const r = await ingest(
      ds,
      '{"id":18446744073709551615,"k":"u64"}\n{"id":9223372036854775808,"k":"2^63"}\n{"id":-9223372036854775809,"k":"neg"}',
    );
    expect(r).toMatchObject({ ingested: 3, failed: 0 });
    const { rows } = await query(`['${ds}'] | project k, id | sort by k asc`);
    expect(rows).toEqual([
      { k: '2^63', id: 9223372036854775808 },
      { k: 'neg', id: -9223372036854775809 },
      { k: 'small', id: 1 },
      { k: 'u64', id: 18446744073709551615 },
    ]);
  });

  it('finds an integer past int64 wherever the body puts it: at its end, across gzip chunks, through the local sink', async () => {
    // The digits are screened as the bytes arrive (util/digit-run.ts); a batch without a long run skips the store's own look.
    const filler = Array.from({ length: 3000 }, (_, i) => `{"id":${i},"k":"f${i}","pad":"${'x'.repeat(i % 97)}"}`);
    const big = '{"k":"big","id":9223372036854775808}';
    const gz = await dataset();
    const r = await svc.call('POST', `/v1/ingest/${gz}`, gzipSync(`${filler.join('\n')}\n${big}`), token, {
      'content-type': 'application/x-ndjson',
      'content-encoding': 'gzip',
    });
    expect(r.status).toBe(200);
    const local = await dataset();
    const sink = new LocalSink(svc.store, local);
    expect(await sink.send(Buffer.from(`{"id":1,"k":"small"}\n${big}`), 'none')).toMatchObject({ kind: 'delivered' });
    for (const ds of [gz, local]) {
      const { rows } = await query(`['${ds}'] | where k in ('big', 'f5', 'small') | project k, id | sort by k asc`);
      expect(rows.find((row) => row.k === 'big')).toEqual({ k: 'big', id: 9223372036854775808 });
      expect(rows.length).toBe(2);
    }
  });

  it('writes 64-bit integers exactly: print, stored fields and aggregates, tabular and legacy', async () => {
    const printed = await query('print a = 9007199254740993, b = -9223372036854775807, c = 7');
    expect(printed.text).toMatch(/\[9007199254740993\],\[-9223372036854775807\],\[7\]/);
    const ds = await dataset();
    await ingest(ds, '{"big":9223372036854775807,"x":1}\n{"big":9007199254740993,"x":2}');
    const stored = await query(`['${ds}'] | sort by x asc | project big`);
    expect(stored.text).toContain('[9223372036854775807,9007199254740993]');
    const summed = await query(`['${ds}'] | summarize m = max(big)`);
    expect(summed.text).toContain('[9223372036854775807]');
    const legacy = await svc.call('POST', '/v1/query/_apl?format=legacy', {
      apl: `['${ds}'] | where x == 2`,
      startTime: '2000-01-01T00:00:00Z',
      endTime: '2100-01-01T00:00:00Z',
    });
    expect(await legacy.text()).toMatch(/"big":9007199254740993\b/);
  });

  describe('two inputs naming one field: the first key, the key holding the dots, the first CSV column', () => {
    const cases: [string, string, string, Record<string, string>, Record<string, unknown>][] = [
      ['a dotted key and a nested path', '{"a":{"b":2},"a.b":1,"z":0}', 'application/x-ndjson', {}, { 'a.b': 1 }],
      ['the same, in a JSON array', '[{"a.b":1,"a":{"b":2},"z":0}]', 'application/json', {}, { 'a.b': 1 }],
      ['a key twice in one object', '{"v":1,"v":2,"z":0}', 'application/x-ndjson', {}, { v: 1 }],
      ['a nested key twice', '[{"o":{"k":"first","k":"second"},"z":0}]', 'application/json', {}, { 'o.k': 'first' }],
      ['a CSV header twice', 'v,z,v\n1,0,2\n', 'text/csv', {}, { v: '1' }],
      ['X-Axiom-CSV-Fields naming one twice', '1,0,2\n', 'text/csv', { 'x-axiom-csv-fields': 'v,z,v' }, { v: '1' }],
    ];
    for (const [what, body, type, headers, expected] of cases) {
      it(`${what}: one value kept, the event counted`, async () => {
        const ds = await dataset();
        const r = await ingest(ds, body, type, headers);
        expect(r).toMatchObject({ ingested: 1, failed: 0, fieldCollisions: 1 });
        const got = (await svc.store.readEvents(ds))[0]!;
        expect(got).toMatchObject(expected);
        // A batch without a collision says nothing of them: the answer keeps Axiom's six fields.
        const plain = await ingest(ds, type === 'text/csv' ? 'v,z\n3,4\n' : '{"z":5}');
        expect(Object.keys(plain).sort()).toEqual([
          'blocksCreated',
          'failed',
          'failures',
          'ingested',
          'processedBytes',
          'walLength',
        ]);
      });
    }

    it('a CSV column named __proto__ or constructor is a field like any other', async () => {
      const ds = await dataset();
      const r = await ingest(ds, '__proto__,constructor,x\np,c,1\n', 'text/csv');
      expect(r).toMatchObject({ ingested: 1, failed: 0 });
      const { rows } = await query(`['${ds}'] | project ['__proto__'], ['constructor'], x`);
      // Built from entries: an object literal's __proto__ would set the prototype, not a key.
      const expected = Object.fromEntries([
        ['__proto__', 'p'],
        ['constructor', 'c'],
        ['x', '1'],
      ]);
      expect(rows).toEqual([expected]);
      expect(Object.keys(rows[0]!)).toContain('__proto__');
    });
  });
});
