/**
 * "A token sees only what it may", driven at random: users' base roles, custom roles' capabilities and
 * members, and groups change in concurrent batches, and after each batch every user's PAT is checked
 * against a model of the rules (rights are the union of base role, role memberships and groups' roles).
 * A failure names its seed: FERRY_ACCESS_SEED=<seed> npx vitest run test/access-random.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, testSeed, type TestService } from './helpers.js';

const DATASETS = ['alpha', 'beta'];
/** The rights a custom role may hold here, each one request can tell apart. */
const GRANTS = {
  alphaQuery: { datasetCapabilities: { alpha: { query: ['read'] } } },
  betaQuery: { datasetCapabilities: { beta: { query: ['read'] } } },
  anyQuery: { datasetCapabilities: { '*': { query: ['read'] } } },
  notifiersRead: { orgCapabilities: { notifiers: ['read'] } },
} as const;
type Grant = keyof typeof GRANTS;
/** What the built-in roles give, as far as these checks see. */
const BUILTIN: Record<string, Grant[]> = {
  user: ['anyQuery', 'notifiersRead'],
  'read-only': ['anyQuery', 'notifiersRead'],
  none: [],
};

interface Model {
  base: Map<string, string>; // user -> built-in role id or custom role name
  roles: Map<string, { grants: Grant[]; members: string[] }>;
  groups: Map<string, { members: string[]; roles: string[] }>;
}

function grantsOf(m: Model, user: string): Set<Grant> {
  const out = new Set<Grant>();
  const add = (role: string) => {
    for (const g of BUILTIN[role] ?? m.roles.get(role)?.grants ?? []) out.add(g);
  };
  add(m.base.get(user)!);
  for (const [name, r] of m.roles) if (r.members.includes(user)) add(name);
  for (const g of m.groups.values()) if (g.members.includes(user)) g.roles.forEach(add);
  return out;
}

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
  for (const d of DATASETS) await svc.createDataset(d);
});
afterAll(async () => svc.stop());

describe('access control, at random', () => {
  it('every PAT gets exactly what the union of its user’s roles allows, after every batch of concurrent changes', async () => {
    const { rnd, replay } = testSeed('FERRY_ACCESS_SEED', 'npx vitest run test/access-random.test.ts');
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const some = <T>(xs: readonly T[]): T[] => xs.filter(() => rnd() < 0.4);

    const call = async (method: string, path: string, body?: unknown) => {
      const r = await svc.call(method, path, body);
      const text = await r.text();
      expect(r.status, `${method} ${path}: ${text}; ${replay}`).toBe(200);
      return JSON.parse(text) as { id: string; token: string };
    };
    const users: { id: string; pat: string }[] = [];
    const model: Model = { base: new Map(), roles: new Map(), groups: new Map() };
    for (let i = 0; i < 3; i++) {
      const u = await call('POST', '/v2/users', { name: `u${i}`, email: `u${i}@example.com`, role: 'none' });
      users.push({ id: u.id, pat: (await call('POST', `/v2/users/${u.id}/tokens`, {})).token });
      model.base.set(u.id, 'none');
    }
    const roleIds = new Map<string, string>();
    for (const name of ['r0', 'r1', 'r2']) {
      roleIds.set(name, (await call('POST', '/v2/rbac/roles', { name })).id);
      model.roles.set(name, { grants: [], members: [] });
    }
    const groupIds = new Map<string, string>();
    for (const name of ['g0', 'g1']) {
      groupIds.set(name, (await call('POST', '/v2/rbac/groups', { name })).id);
      model.groups.set(name, { members: [], roles: [] });
    }
    const ids = users.map((u) => u.id);
    const roleRef = (r: string) => roleIds.get(r) ?? r;

    for (let step = 0; step < 25; step++) {
      // One change per entity in a batch, sent together: their order does not matter, their sum does.
      const batch: Promise<unknown>[] = [];
      const touched = new Set<string>();
      for (let k = 0; k < 4; k++) {
        const kind = pick(['base', 'role', 'group'] as const);
        if (kind === 'base') {
          const u = pick(ids);
          if (touched.has(u)) continue;
          touched.add(u);
          const role = pick([...Object.keys(BUILTIN), ...model.roles.keys()]);
          model.base.set(u, role);
          batch.push(call('PUT', `/v2/users/${u}/role`, { role: roleRef(role) }));
        } else if (kind === 'role') {
          const name = pick([...model.roles.keys()]);
          if (touched.has(name)) continue;
          touched.add(name);
          const grants = some(Object.keys(GRANTS) as Grant[]);
          const members = some(ids);
          model.roles.set(name, { grants, members });
          const caps = {
            datasetCapabilities: {} as Record<string, unknown>,
            orgCapabilities: {} as Record<string, unknown>,
          };
          for (const g of grants) {
            const grant: { datasetCapabilities?: object; orgCapabilities?: object } = GRANTS[g];
            Object.assign(caps.datasetCapabilities, grant.datasetCapabilities ?? {});
            Object.assign(caps.orgCapabilities, grant.orgCapabilities ?? {});
          }
          batch.push(call('PUT', `/v2/rbac/roles/${roleIds.get(name)}`, { name, members, ...caps }));
        } else {
          const name = pick([...model.groups.keys()]);
          if (touched.has(name)) continue;
          touched.add(name);
          const g = { members: some(ids), roles: some([...Object.keys(BUILTIN), ...model.roles.keys()]) };
          model.groups.set(name, g);
          batch.push(
            call('PUT', `/v2/rbac/groups/${groupIds.get(name)}`, {
              name,
              members: g.members,
              roles: g.roles.map(roleRef),
            }),
          );
        }
      }
      await Promise.all(batch);
      for (const u of users) {
        const want = grantsOf(model, u.id);
        const state = `step ${step}, user ${u.id}: model ${[...want].join(',') || 'nothing'}; ${replay}`;
        for (const d of DATASETS) {
          const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: `['${d}'] | count` }, u.pat);
          const may = want.has('anyQuery') || want.has(d === 'alpha' ? 'alphaQuery' : 'betaQuery');
          expect(r.status, `query ${d} at ${state}`).toBe(may ? 200 : 403);
        }
        const n = await svc.call('GET', '/v2/notifiers', undefined, u.pat);
        expect(n.status, `notifiers at ${state}`).toBe(want.has('notifiersRead') ? 200 : 403);
        const listed = (await (await svc.call('GET', '/v2/datasets', undefined, u.pat)).json()) as { name: string }[];
        const visible = DATASETS.filter(
          (d) => want.has('anyQuery') || want.has(d === 'alpha' ? 'alphaQuery' : 'betaQuery'),
        );
        expect(listed.map((d) => d.name).sort(), `datasets listed at ${state}`).toEqual(visible);
      }
    }
  }, 120_000);
});
