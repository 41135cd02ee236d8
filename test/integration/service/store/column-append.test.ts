/**
 * Rows appended as columns through DuckDB's appender (store/column-append.ts, the metrics store's points):
 * read back exactly, nulls where the doubles hold NaN on either side of a chunk's edges, within the
 * connection's transaction (rolled back with it), and side by side from two connections.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { int64Column } from '../../../../src/service/store/column-append.js';
import { Database } from '../../../../src/service/store/db.js';

let db: Database | undefined;
let dir: string | undefined;
afterEach(() => {
  db?.close();
  db = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(): Promise<Database> {
  dir = mkdtempSync(join(tmpdir(), 'ferry-append-'));
  db = await Database.open(join(dir, 'db.duckdb'), { memoryLimitBytes: 512 * 2 ** 20, tempDir: join(dir, 'tmp') }, 2);
  await db.use((c) => c.run('CREATE TABLE p (series BIGINT, t BIGINT, v DOUBLE)'));
  return db;
}

/** Rows of a seeded pattern: ids near the int64 edges a double holds exactly, negative times, NaN gaps. */
function rows(n: number, salt: number) {
  const ids = new Float64Array(n);
  const ts = new Float64Array(n);
  const vs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    ids[i] = i % 3 === 0 ? 2 ** 53 - 1 - i : i + salt;
    ts[i] = i % 5 === 0 ? -i - 1 : 1_767_225_600 + i * 10;
    // Gaps on a chunk's first and last rows, on a word of the validity mask's edges, and scattered.
    vs[i] = i % 2048 === 0 || i % 2048 === 2047 || i % 64 === 63 || i % 97 === 0 ? NaN : (i * salt) / 8;
  }
  return { ids, ts, vs };
}

describe('appending columns', () => {
  it('stores every row as given, over many chunks and turns of the event loop', async () => {
    const d = await open();
    const n = 150_001;
    const { ids, ts, vs } = rows(n, 7);
    await d.use((c) => c.transaction(() => c.append('p', [int64Column(ids, n), int64Column(ts, n), vs], n)));
    const [sums] = await d.use((c) =>
      c.all(`SELECT count(*) AS n, count(v) AS values, sum(series::HUGEINT) AS s, sum(t) AS t, sum(v) AS v FROM p`),
    );
    let s = 0n;
    let t = 0n;
    let values = 0;
    let v = 0;
    for (let i = 0; i < n; i++) {
      s += BigInt(ids[i]!);
      t += BigInt(ts[i]!);
      if (vs[i] === vs[i]) {
        values++;
        v += vs[i]!;
      }
    }
    expect(Number(sums!.n)).toBe(n);
    expect(Number(sums!.values)).toBe(values);
    expect(BigInt(sums!.s as bigint)).toBe(s);
    expect(BigInt(sums!.t as bigint)).toBe(t);
    expect(sums!.v as number).toBeCloseTo(v, 0);
    // Row by row where the layout could slip: a chunk's edges and the last row.
    const picks = [0, 1, 63, 64, 2047, 2048, 2049, 65_535, 65_536, 150_000];
    const got = await d.use((c) =>
      c.all(
        `SELECT * FROM (SELECT row_number() OVER () - 1 AS i, * FROM p) WHERE i IN (${picks.join(',')}) ORDER BY i`,
      ),
    );
    expect(got.map((r) => [Number(r.i), Number(r.series), Number(r.t), r.v])).toEqual(
      picks.map((i) => [i, ids[i], ts[i], vs[i] === vs[i] ? vs[i] : null]),
    );
  });

  it('belongs to the transaction: a failure after it leaves no row', async () => {
    const d = await open();
    const n = 5000;
    const { ids, ts, vs } = rows(n, 3);
    await expect(
      d.use((c) =>
        c.transaction(async () => {
          await c.append('p', [int64Column(ids, n), int64Column(ts, n), vs], n);
          throw new Error('after the append');
        }),
      ),
    ).rejects.toThrow('after the append');
    const [r] = await d.use((c) => c.all('SELECT count(*) AS n FROM p'));
    expect(Number(r!.n)).toBe(0);
  });

  it('refuses columns shorter than the rows, and a table that does not exist, naming it', async () => {
    const d = await open();
    await expect(
      d.use((c) => c.append('p', [new BigInt64Array(2), new BigInt64Array(3), new Float64Array(3)], 3)),
    ).rejects.toThrow(/appending 3 rows to p: a column holds only 2/);
    await expect(d.use((c) => c.append('nope', [new Float64Array(1)], 1))).rejects.toThrow(/nope/);
    // A BIGINT is written from whole numbers a double holds exactly, or refused: never wrapped.
    expect(() => int64Column([1e19], 1)).toThrow(/a BIGINT column got 10000000000000000000, not a whole number/);
    expect(() => int64Column([1.5], 1)).toThrow(/got 1.5/);
  });

  it('appends side by side from two connections, each batch whole', async () => {
    const d = await open();
    const batches = 12;
    const n = 9000;
    await Promise.all(
      Array.from({ length: batches }, (_, b) =>
        d.use((c) =>
          c.transaction(async () => {
            const ids = new Float64Array(n).fill(b);
            const ts = new Float64Array(n).map((_, i) => i);
            await c.append('p', [int64Column(ids, n), int64Column(ts, n), new Float64Array(n).fill(b / 2)], n);
          }),
        ),
      ),
    );
    const got = await d.use((c) =>
      c.all(
        'SELECT series, count(*) AS n, count(DISTINCT t) AS times, min(v) AS lo, max(v) AS hi FROM p GROUP BY series ORDER BY series',
      ),
    );
    expect(got.map((r) => [Number(r.series), Number(r.n), Number(r.times), r.lo, r.hi])).toEqual(
      Array.from({ length: batches }, (_, b) => [b, n, n, b / 2, b / 2]),
    );
  });
});
