/**
 * phrases() and spotlight() in a summarize are planned in SQL (src/apl/compiler/side-aggregates.ts), so
 * that JavaScript never reads a whole group at once; they must answer exactly what the functions over the
 * group's rows in JavaScript answer (service/query/analysis-functions.ts). A seeded run draws events of
 * every kind of field (few and many numbers, strings, booleans, arrays, nulls), a predicate and a
 * grouping, and compares both, value by value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phrases, spotlight } from '../../../src/service/query/analysis-functions.js';
import { startTestService, type TestService, testSeed } from '../../support/helpers.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** Equal, numbers within the rounding the functions apply (6 decimals) of one another. */
function close(a: unknown, b: unknown, path = '$'): string | undefined {
  if (typeof a === 'number' && typeof b === 'number')
    return Math.abs(a - b) <= 2e-6 * Math.max(1, Math.abs(a)) ? undefined : `${path}: ${a} != ${b}`;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${path}: length ${a.length} != ${b.length}`;
    for (let i = 0; i < a.length; i++) {
      const d = close(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = close((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
      if (d) return d;
    }
    return undefined;
  }
  return a === b ? undefined : `${path}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`;
}

describe('phrases and spotlight planned in SQL (seeded)', () => {
  it('answer what the functions over the rows in JavaScript answer', async () => {
    const { rnd, replay } = testSeed(
      'FERRY_ANALYSIS_SEED',
      'npx vitest run test/integration/apl/analysis-plans.test.ts',
    );
    const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const words = 'the error of disk a timeout on host retry failed cache miss'.split(' ');
    for (let round = 0; round < 4; round++) {
      const ds = `a${round}`;
      await svc.createDataset(ds);
      const manyNumbers = rnd() < 0.5;
      const events = Array.from({ length: 50 + Math.floor(rnd() * 400) }, () => ({
        g: pick(['x', 'y', 'z']),
        cat: pick(['GET', 'POST', 'PUT', null, 'DELETE']),
        n: manyNumbers ? Math.floor(rnd() * 1000) : pick([1, 2, 3]),
        r: rnd() < 0.1 ? null : Math.round(rnd() * 1e4) / 100,
        b: pick([true, false, null]),
        arr: pick([[1], [1, 2], null, ['a']]),
        // Repeated sentences make phrases of every length tie on their counts, which the choice depends on.
        msg:
          rnd() < 0.6
            ? pick(['disk full error', 'disk full error on host', 'retry failed', 'cache miss on host'])
            : Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => pick(words)).join(pick([' ', ' ', ', '])),
      }));
      const token = await svc.apiToken({ [ds]: { ingest: ['create'], query: ['read'] } });
      const ing = await svc.call('POST', `/v1/ingest/${ds}`, events, token);
      expect(ing.status, replay).toBe(200);
      const predicate = pick([
        { apl: 'n % 3 == 0', js: (e: (typeof events)[0]) => e.n % 3 === 0 },
        { apl: "cat == 'GET'", js: (e: (typeof events)[0]) => e.cat === 'GET' },
        { apl: 'r > 50', js: (e: (typeof events)[0]) => e.r !== null && e.r > 50 },
      ]);
      const byGroup = rnd() < 0.5;
      const groups = byGroup ? ['x', 'y', 'z'].filter((g) => events.some((e) => e.g === g)) : [undefined];
      const max = 1 + Math.floor(rnd() * 5);
      const q = `['${ds}'] | summarize s = spotlight(${predicate.apl}, cat, n, r, b, arr), p = phrases(msg, ${max})${byGroup ? ' by g | sort by g asc' : ''}`;
      const r = await svc.call('POST', '/v1/query/_apl', { apl: q, startTime: '2000-01-01T00:00:00Z' });
      const body = (await r.json()) as { tables: { fields: { name: string }[]; columns: unknown[][] }[] };
      expect(r.status, `${replay}: ${JSON.stringify(body)}`).toBe(200);
      const t = body.tables[0]!;
      const col = (name: string) => t.columns[t.fields.findIndex((f) => f.name === name)]!;
      groups.forEach((g, row) => {
        const rows = events.filter((e) => g === undefined || e.g === g);
        const expected = spotlight(
          rows.map((e) => [predicate.js(e), e.cat, e.n, e.r, e.b, e.arr]),
          ['cat', 'n', 'r', 'b', 'arr'],
        );
        const diff = close(col('s')[row], expected);
        expect(diff, `${replay}, round ${round}, group ${g}, ${q}`).toBeUndefined();
        expect(col('p')[row], `${replay}, round ${round}, group ${g}`).toEqual(
          phrases(
            rows.map((e) => e.msg),
            max,
          ),
        );
      });
    }
  }, 60_000);
});
