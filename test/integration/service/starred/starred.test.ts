/** Starred queries: saved APL requests, seen through the starredQueries capability on their dataset. */
import { Axiom } from '@axiomhq/js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc.stop());

type Saved = { id: string; name: string; who: string; dataset?: string; query: Record<string, unknown> };
const save = async (body: Record<string, unknown>, token = ADMIN): Promise<Saved> => {
  const r = await svc.call('POST', '/v2/apl-starred-queries', { kind: 'apl', metadata: {}, ...body }, token);
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return JSON.parse(text) as Saved;
};
const list = async (query: string, token = ADMIN): Promise<Saved[]> => {
  const r = await svc.call('GET', `/v2/apl-starred-queries${query}`, undefined, token);
  expect(r.status).toBe(200);
  return (await r.json()) as Saved[];
};

const patFor = (role: string, name: string) => svc.userWithPat(role, name);

describe('starred queries', () => {
  it('saves with who set by the server, lists with limit, offset, dataset, who and qs, and the official client reads them', async () => {
    const ada = await patFor('user', 'ada');
    const mine = await save({
      name: 'Slow requests',
      dataset: 'http',
      who: 'someone-else',
      query: { apl: "['http'] | where ms > 500", startTime: 'now-1h', defaultOrder: [{ field: '_time', desc: true }] },
      // Any JSON object: nested values, numbers, booleans, null and lists come back as sent.
      metadata: { color: 'red', pinned: true, order: 3, view: { chart: 'line', series: ['a', null] }, note: null },
    });
    expect(mine).toEqual({
      id: mine.id,
      kind: 'apl',
      name: 'Slow requests',
      who: 'owner',
      dataset: 'http',
      query: {
        apl: "['http'] | where ms > 500",
        startTime: 'now-1h',
        defaultOrder: [{ field: '_time', desc: true }],
        libraries: null,
        queryOptions: {},
      },
      metadata: { color: 'red', pinned: true, order: 3, view: { chart: 'line', series: ['a', null] }, note: null },
    });
    const hers = await save(
      { name: 'errors', dataset: 'app', query: { apl: "['app'] | where level == 'error'" } },
      ada.pat,
    );
    expect(hers.who).toBe(ada.id);
    for (let i = 0; i < 5; i++) await save({ name: `page ${i}`, query: { apl: `print ${i}` } });

    expect((await list('')).map((s) => s.name)).toEqual([
      'Slow requests',
      'page 0',
      'page 1',
      'page 2',
      'page 3',
      'page 4',
    ]);
    expect((await list('?limit=2&offset=1')).map((s) => s.name)).toEqual(['page 0', 'page 1']);
    expect((await list('?who=team')).map((s) => s.name)).toEqual(['errors']);
    expect((await list('?who=all&dataset=app')).map((s) => s.name)).toEqual(['errors']);
    expect((await list(`?who=${ada.id}`)).map((s) => s.name)).toEqual(['errors']);
    expect((await list('?who=all&qs=SLOW')).map((s) => s.name)).toEqual(['Slow requests']);
    expect((await list('?who=all&qs=level')).map((s) => s.name)).toEqual(['errors']);
    expect((await list('', ada.pat)).map((s) => s.name)).toEqual(['errors']);
    for (const bad of ['?limit=0', '?limit=1001', '?offset=-1', '?limit=x']) {
      const r = await svc.call('GET', `/v2/apl-starred-queries${bad}`);
      expect(r.status, bad).toBe(400);
    }
    const client = new Axiom({ token: ADMIN, url: svc.url });
    expect(((await client.savedQueries.list({ who: 'all' } as never)) as Saved[]).length).toBe(7);
    expect(((await client.savedQueries.get(hers.id)) as Saved).name).toBe('errors');
  });

  it('is seen only with starredQueries rights on its dataset; changed only by who saved it or a user manager', async () => {
    const bob = await patFor('user', 'bob');
    const carol = await patFor('user', 'carol');
    const reader = await patFor('read-only', 'rita');
    const bobs = await save({ name: 'bob-q', dataset: 'app', query: { apl: "['app'] | count" } }, bob.pat);
    const scoped = await svc.apiToken({ other: { starredQueries: ['read', 'create'] } });
    // The token sees neither the list entry nor the query itself, the same as for an id that does not exist.
    expect((await list('?who=all', scoped)).map((s) => s.name)).not.toContain('bob-q');
    const hidden = await svc.call('GET', `/v2/apl-starred-queries/${bobs.id}`, undefined, scoped);
    const missing = await svc.call('GET', '/v2/apl-starred-queries/nope', undefined, scoped);
    expect([hidden.status, missing.status]).toEqual([404, 404]);
    expect((await hidden.json()).message).toBe(`starred query "${bobs.id}" not found`);
    // It may save for its dataset only.
    const saving = async (body: Record<string, unknown>, token: string) =>
      (await svc.call('POST', '/v2/apl-starred-queries', { query: { apl: 'print 1' }, ...body }, token)).status;
    expect(await saving({ name: 'x', dataset: 'other' }, scoped)).toBe(200);
    expect(await saving({ name: 'x', dataset: 'app' }, scoped)).toBe(403);
    // Read-only reads it but cannot save; another user cannot change it; the owner (users:update) can.
    expect((await svc.call('GET', `/v2/apl-starred-queries/${bobs.id}`, undefined, reader.pat)).status).toBe(200);
    expect(await saving({ name: 'r' }, reader.pat)).toBe(403);
    const change = { name: 'bob-q2', dataset: 'app', query: { apl: "['app'] | take 1" } };
    expect((await svc.call('PUT', `/v2/apl-starred-queries/${bobs.id}`, change, carol.pat)).status).toBe(403);
    expect((await svc.call('DELETE', `/v2/apl-starred-queries/${bobs.id}`, undefined, carol.pat)).status).toBe(403);
    const updated = await svc.call('PUT', `/v2/apl-starred-queries/${bobs.id}`, change, bob.pat);
    expect(await updated.json()).toMatchObject({
      id: bobs.id,
      name: 'bob-q2',
      who: bob.id,
      query: { apl: "['app'] | take 1" },
    });
    expect((await svc.call('DELETE', `/v2/apl-starred-queries/${bobs.id}`)).status).toBe(204);
    expect((await svc.call('GET', `/v2/apl-starred-queries/${bobs.id}`)).status).toBe(404);
  });

  it('refuses bodies that are not starred queries, naming the field; racing updates and a delete leave one outcome', async () => {
    const cases: [unknown, RegExp][] = [
      [{ name: 'x' }, /^query is required/],
      [{ name: 'x', query: {} }, /^query.apl is required/],
      [{ query: { apl: 'print 1' } }, /^name is required/],
      [{ name: 'x', kind: 'stream', query: { apl: 'print 1' } }, /^kind must be "apl"/],
      [{ name: 'x', query: { apl: 'print 1', defaultLimit: 'ten' } }, /^query.defaultLimit must be a number/],
      [{ name: 'x', query: { apl: 'print 1' }, metadata: [1] }, /^metadata must be an object/],
      [{ name: 'x', query: { apl: 'print 1' }, metadata: 'red' }, /^metadata must be an object/],
      [
        // As text: JSON.stringify (the client's and, before the bound, the store's) overflows on it.
        `{"name":"x","query":{"apl":"print 1"},"metadata":{"a":${'['.repeat(5000)}1${']'.repeat(5000)}}}`,
        /^metadata nests deeper than 32 levels/,
      ],
    ];
    for (const [body, message] of cases) {
      const r = await svc.call('POST', '/v2/apl-starred-queries', body, undefined, {
        'content-type': 'application/json',
      });
      expect(r.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect((await r.json()).message).toMatch(message);
    }
    const q = await save({ name: 'race', query: { apl: 'print 0' } });
    const answers = await Promise.all([
      ...Array.from({ length: 5 }, (_, i) =>
        svc.call('PUT', `/v2/apl-starred-queries/${q.id}`, { name: `race ${i}`, query: { apl: `print ${i}` } }),
      ),
      svc.call('DELETE', `/v2/apl-starred-queries/${q.id}`),
    ]);
    expect(answers.every((r) => [200, 204, 404].includes(r.status))).toBe(true);
    // Whatever the order, once the delete ran the query is gone for good.
    expect((await svc.call('GET', `/v2/apl-starred-queries/${q.id}`)).status).toBe(404);
  });
});
