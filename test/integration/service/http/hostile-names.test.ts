/**
 * Names users give that JavaScript objects also have (`constructor`, `toString`, `__proto__`…) as APL
 * functions, units, types and parameters, ingest options, capability names, role names, template
 * functions, body keys, path segments and legacy query operators; times past what nanoseconds hold; a huge
 * cursor. A review found about fifteen of these answering 500 (and one granting rights through
 * Object.prototype): each is a 4xx or a 2xx now, never a 5xx, and no name grants what it does not say.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateCapabilities } from '../../../../src/service/auth/capabilities.js';
import { startTestService, type TestService } from '../../../support/helpers.js';

/** Every name an object inherits: the fuzz dictionaries take them too (bench/fuzz.ts). */
export const INHERITED_NAMES = Object.getOwnPropertyNames(Object.prototype);

let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('p');
  token = await svc.apiToken();
  await svc.call('POST', '/v1/ingest/p', [{ a: 1, s: 'x' }], token);
});
afterAll(async () => svc?.stop());

describe('names an object inherits', () => {
  it('answer 2xx or 4xx with {code, message} everywhere a user gives a name', async () => {
    const fives: string[] = [];
    const call = async (
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
      t?: string,
    ) => {
      const r = await svc.call(method, path, body, t, headers);
      const text = await r.text();
      if (r.status >= 500) fives.push(`${r.status} ${method} ${path} ${JSON.stringify(body)?.slice(0, 160)}`);
      if (r.status >= 400) expect(JSON.parse(text), `${method} ${path}`).toMatchObject({ code: r.status });
    };
    for (const n of INHERITED_NAMES) {
      const apls = [
        `print x = ${n}(null)`,
        `print x = 5${n}`,
        `declare query_parameters(p:${n}=1); print p`,
        `['p'] | summarize ${n}(a)`,
        `['p'] | where ${n} == 1`,
        `print x = dynamic({"${n}": 1}).${n}`,
        `['p'] | ${n}`,
        `print datetime_part('${n}', now())`,
        `print x = ago(1${n})`,
        `['p'] | make-series count() on _time step 1${n}`,
        `datatable(a:${n})[1]`,
        `let ${n} = 1; print ${n}`,
        `print x = series_${n}(dynamic([1]))`,
        `print x = genai_${n}(dynamic([]))`,
        `print x = format_bytes(1, 0, '${n}')`,
      ];
      for (const apl of apls) {
        await call('POST', '/v1/datasets/_apl?format=tabular', { apl, startTime: '2000-01-01T00:00:00Z' });
        await call('POST', '/v1/datasets/_apl?format=legacy', { apl });
      }
      await call('POST', `/v1/ingest/p?timestamp-format=${n}`, [{ a: 1 }], {}, token);
      await call('POST', `/v1/ingest/p?timestamp-field=${n}`, [{ a: 1, [n]: '2024-01-01T00:00:00Z' }], {}, token);
      await call('POST', '/v1/ingest/p', `[{"a": 1}]`, { 'x-axiom-event-labels': `{"${n}":1}` }, token);
      await call('POST', '/v2/tokens', { name: 't', datasetCapabilities: { p: { [n]: ['read'] } } });
      await call('POST', '/v2/tokens', { name: 't', orgCapabilities: { [n]: ['read'] } });
      await call('POST', '/v2/rbac/roles', { name: `r${n}`, datasetCapabilities: { [n]: { query: ['read'] } } });
      await call('POST', '/v2/users', { name: 'u', email: `u${n}@example.com`, role: n });
      for (const body of [`{{${n} "x"}}`, `{{ ${n} }}`, `{{.${n}}}`])
        await call('POST', '/v2/notifiers', {
          name: 'n',
          properties: { customWebhook: { url: 'http://127.0.0.1:9/', body } },
        });
      await call('POST', '/v2/monitors', { name: 'm', type: n, aplQuery: "['p'] | count", operator: n, threshold: 1 });
      await call('POST', '/v2/notifiers', { name: 'n', properties: { [n]: { url: 'http://127.0.0.1:9/' } } });
      for (const path of [
        '/v2/datasets/',
        '/v2/datasets/p/fields/',
        '/v2/monitors/',
        '/v2/notifiers/',
        '/v2/tokens/',
        '/v2/users/',
        '/v2/rbac/roles/',
      ])
        await call('GET', `${path}${n}`);
      await call('POST', '/v1/datasets/p/query', {
        startTime: '2000-01-01T00:00:00Z',
        endTime: '2100-01-01T00:00:00Z',
        filter: { op: n, field: 'a', value: 1 },
        aggregations: [{ op: n, field: n }],
        groupBy: [n],
      });
    }
    await call('POST', '/v1/datasets/_apl', { apl: "['p']", cursor: '9'.repeat(5000) });
    for (const t of ['9999-12-31T23:59:59Z', '0001-01-02T00:00:00Z', 'now-10000000d', 'now+10000000d'])
      for (const key of ['startTime', 'endTime'])
        await call('POST', '/v1/datasets/_apl', { apl: "['p'] | count", [key]: t });
    await call('POST', '/v1/datasets/_apl', {
      apl: "['p']",
      startTime: '1000-01-01T00:00:00Z',
      endTime: '9999-12-31T23:59:59Z',
    });
    expect(fives).toEqual([]);
  }, 120_000);

  it('a capability entry named __proto__ is refused, and grants nothing to anyone', async () => {
    expect(validateCapabilities(JSON.parse('{"__proto__": {"query": ["read"]}}'), undefined)).toMatch(
      /datasetCapabilities\.__proto__: not a dataset name/,
    );
    expect(validateCapabilities({ constructor: { query: ['read'] } }, { toString: ['read'] })).toMatch(
      /toString|constructor/,
    );
    const r = await svc.call('POST', '/v2/rbac/roles', {
      name: 'sneaky',
      datasetCapabilities: JSON.parse('{"__proto__": {"query": ["read"]}, "p": {"ingest": ["create"]}}') as object,
    });
    expect(r.status).toBe(400);
    // The body parser refuses a __proto__ key before any handler sees it; the capability check would too.
    expect(((await r.json()) as { message: string }).message).toMatch(/not valid JSON/);
    const ingestOnly = await svc.apiToken({ p: { ingest: ['create'] } });
    expect((await svc.call('POST', '/v1/query/_apl', { apl: "['p']" }, ingestOnly)).status).toBe(403);
    expect(({} as Record<string, unknown>).query).toBeUndefined();
  });
});
