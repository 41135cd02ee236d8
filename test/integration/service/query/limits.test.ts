/**
 * Query limits: a query too large, too long or too wide is a 400 naming the limit and its config key
 * (service.query_limits), and what DuckDB itself cannot plan is a 400 saying so, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_QUERY_LIMITS } from '../../../../src/service/query/limits.js';
import { startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let loose: TestService;
let shallow: TestService;
beforeAll(async () => {
  // 200 nested operators take DuckDB's planner some 220 MB: more than DuckDB's share of 256 MB (192 MiB).
  svc = await startTestService({ memoryLimitBytes: 512 * 1024 * 1024 });
  await svc.createDataset('e');
  // Limits raised past what the engine can plan, to see the engine's own refusal.
  loose = await startTestService({
    queryLimits: { ...DEFAULT_QUERY_LIMITS, maxQueryBytes: 1 << 20, maxStages: 5000, maxColumns: 100_000 },
  });
  await loose.createDataset('e');
  shallow = await startTestService({
    queryLimits: { ...DEFAULT_QUERY_LIMITS, maxQueryBytes: 1 << 20, maxExpressionDepth: 10 },
  });
});
afterAll(async () => {
  await svc?.stop();
  await loose?.stop();
  await shallow?.stop();
});

async function apl(s: TestService, q: string): Promise<{ status: number; message: string }> {
  const r = await s.call('POST', '/v1/query/_apl', { apl: q });
  const body = (await r.json()) as { message?: string; code?: number };
  if (r.status >= 400) expect(body.code).toBe(r.status);
  return { status: r.status, message: body.message ?? '' };
}

describe('query limits', () => {
  it('refuses more operators than service.query_limits.max_stages, pointing at the first one past the limit', async () => {
    expect((await apl(svc, `['e']${' | take 5'.repeat(200)}`)).status).toBe(200);
    const r = await apl(svc, `['e']${' | take 5'.repeat(201)}`);
    expect(r).toEqual({
      status: 400,
      message: `line 1, column ${5 + 200 * 9 + 4}: the query has 201 operators, more than the limit of 200 (service.query_limits.max_stages)`,
    });
    // Subqueries count too.
    expect((await apl(svc, `['e'] | union (['e']${' | where true'.repeat(200)})`)).message).toMatch(
      /the query has 201 operators/,
    );
  });

  it('refuses more columns than service.query_limits.max_columns, and text over max_query_bytes', async () => {
    const wide = `['e'] | extend ${Array.from({ length: 2200 }, (_, i) => `c${i} = ${i}`).join(', ')}`;
    expect(await apl(svc, wide)).toEqual({
      status: 400,
      message: 'the query makes 2202 columns, more than the limit of 2100 (service.query_limits.max_columns)',
    });
    const long = `['e'] | where x == '${'y'.repeat(300_000)}'`;
    expect(await apl(svc, long)).toEqual({
      status: 400,
      message: `the query is ${long.length} bytes, more than the limit of 262144 (service.query_limits.max_query_bytes)`,
    });
  });

  it('refuses expressions nested deeper than service.query_limits.max_expression_depth, and runs those within it', async () => {
    const nest = (n: number, shape: (inner: string) => string, leaf: string) => {
      let e = leaf;
      for (let i = 0; i < n; i++) e = shape(e);
      return e;
    };
    // Just under the default cap, each shape runs to the end in DuckDB.
    for (const shape of [
      (x: string) => `abs(${x})`,
      (x: string) => `(1 + ${x})`,
      (x: string) => `iff(true, ${x}, 0)`,
    ]) {
      const ok = await apl(svc, `print v = ${nest(250, shape, '1')}`);
      expect(ok.status, ok.message).toBe(200);
    }
    const tooDeep = await apl(svc, `print v = ${nest(300, (x) => `abs(${x})`, '1')}`);
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.message).toMatch(
      /^line 1, column \d+: the expression is nested too deeply \(more than 256 levels, service.query_limits.max_expression_depth\)$/,
    );
    // A lower setting is honoured, and named.
    const r = await apl(shallow, `print v = ${nest(12, (x) => `abs(${x})`, '1')}`);
    expect(r.message).toMatch(/nested too deeply \(more than 10 levels, service.query_limits.max_expression_depth\)/);
    expect((await apl(shallow, `print v = ${nest(8, (x) => `abs(${x})`, '1')}`)).status).toBe(200);
    const dyn = await apl(shallow, `print v = dynamic(${nest(12, (x) => `[${x}]`, '1')})`);
    expect(dyn.message).toMatch(/dynamic literal is nested too deeply \(more than 10 levels/);
  });

  it('what the engine cannot plan or hold is a 400 with its reason, never a 500', async () => {
    const deep = await apl(loose, `['e']${' | take 5'.repeat(450)}`);
    expect(deep.status).toBe(400);
    expect(deep.message).toMatch(/^the query is too complex for the engine: Parser Error: Maximum tree depth/);
    const wide = await apl(
      loose,
      `['e'] | extend ${Array.from({ length: 3000 }, (_, i) => `c${i} = ${i}`).join(', ')}`,
    );
    expect([200, 400]).toContain(wide.status);
    if (wide.status === 400)
      expect(wide.message).toMatch(
        /^the query needs more memory than service.memory_limit allows: Out of Memory Error/,
      );
  });
});
