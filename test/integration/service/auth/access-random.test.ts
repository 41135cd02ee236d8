/**
 * "A token sees only what it may", driven at random: users' base roles, custom roles' capabilities and
 * members, and groups change in concurrent batches, and after each batch every user's PAT is checked
 * against a model of the rules (rights are the union of base role, role memberships and groups' roles).
 * A failure names its seed: FERRY_ACCESS_SEED=<seed> npx vitest run test/integration/service/auth/access-random.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../../../src/cli/config.js';
import { httpReceiver, type HttpReceiver } from '../../../support/monitor-receivers.js';
import {
  ADMIN,
  mergeCapabilities,
  startTestService,
  testSeed,
  type TestService,
  walkingClock,
} from '../../../support/helpers.js';

const DATASETS = ['alpha', 'beta'];
/** The rights a custom role may hold here, each one request can tell apart. */
const GRANTS = {
  alphaQuery: { datasetCapabilities: { alpha: { query: ['read'] } } },
  betaQuery: { datasetCapabilities: { beta: { query: ['read'] } } },
  anyQuery: { datasetCapabilities: { '*': { query: ['read'] } } },
  notifiersRead: { orgCapabilities: { notifiers: ['read'] } },
  auditRead: { orgCapabilities: { auditLog: ['read'] } },
} as const;
/** The service's own datasets, there from the start: the audit trail, and the monitor runs. */
const AUDIT = 'axiom-audit';
const RUNS = 'ferry-monitor-runs';
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
    const { rnd, replay } = testSeed(
      'FERRY_ACCESS_SEED',
      'npx vitest run test/integration/service/auth/access-random.test.ts',
    );
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
          const caps = mergeCapabilities(grants.map((g) => GRANTS[g]));
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
        const mayRead = (d: string) =>
          d === AUDIT
            ? want.has('auditRead')
            : d === RUNS
              ? want.has('auditRead') && want.has('anyQuery')
              : want.has('anyQuery') || want.has(d === 'alpha' ? 'alphaQuery' : 'betaQuery');
        for (const d of [...DATASETS, AUDIT, RUNS]) {
          const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: `['${d}'] | count` }, u.pat);
          const body = await r.text();
          expect(r.status, `query ${d} at ${state}: ${body}`).toBe(mayRead(d) ? 200 : 403);
        }
        const n = await svc.call('GET', '/v2/notifiers', undefined, u.pat);
        expect(n.status, `notifiers at ${state}`).toBe(want.has('notifiersRead') ? 200 : 403);
        const listed = (await (await svc.call('GET', '/v2/datasets', undefined, u.pat)).json()) as { name: string }[];
        const visible = [...DATASETS, AUDIT, RUNS].filter(mayRead).sort();
        expect(listed.map((d) => d.name).sort(), `datasets listed at ${state}`).toEqual(visible);
      }
    }
  }, 120_000);
});

/**
 * What runs later, at random: principals with fewer rights act on monitors, notifiers, tokens and
 * starred queries others made (rewriting a monitor's query and notifiers, pointing a notifier elsewhere
 * with or without its secret, deleting or regenerating tokens), in concurrent batches; after each, the
 * monitors run and every delivery is checked. A delivery to the destination X chose carries only X's
 * secret; its events come from datasets the monitor's last chooser may read, and, when X chose the
 * destination after that, from datasets X may read too. Token actions succeed exactly when the actor
 * holds every right of the token; a starred query shows only to who may query what it reads.
 */
describe('consequences of actions on what others made, at random', () => {
  const T0 = Date.parse('2026-05-01T00:00:00Z');
  const MIN = 60_000;
  const clock = walkingClock(T0);
  const CRUD = ['create', 'read', 'update', 'delete'];
  const ABILITIES = {
    alpha: { datasetCapabilities: { alpha: { query: ['read'] } } },
    beta: { datasetCapabilities: { beta: { query: ['read'] } } },
    monitors: { orgCapabilities: { monitors: CRUD } },
    notifiers: { orgCapabilities: { notifiers: CRUD } },
    manager: { orgCapabilities: { users: ['read', 'update'] } },
    tokens: { orgCapabilities: { apiTokens: CRUD } },
    starred: { datasetCapabilities: { '*': { starredQueries: CRUD } } },
  } as const;
  type Ability = keyof typeof ABILITIES;
  interface Actor {
    name: string;
    token: string;
    id: string;
    can: Set<Ability | 'all'>;
  }
  let svc2: TestService;
  let hook: HttpReceiver;
  beforeAll(async () => {
    hook = await httpReceiver();
    const cfg = buildConfig({ service: { monitors: { enabled: false }, notifiers: { attempts: 1 } } }, {});
    svc2 = await startTestService({ monitors: cfg.service.monitors, notifiers: cfg.service.notifiers }, undefined, {
      clock,
    });
    for (const d of DATASETS) await svc2.createDataset(d);
  });
  afterAll(async () => {
    await svc2?.stop();
    await hook?.close();
  });

  it('no run, delivery, token or starred query carries more than the principal who last chose it may (seeded)', async () => {
    const { rnd, replay } = testSeed(
      'FERRY_CONSEQUENCE_SEED',
      'npx vitest run test/integration/service/auth/access-random.test.ts',
    );
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const ok = async (r: Promise<Response>) => {
      const res = await r;
      const text = await res.text();
      expect(res.status, `${text}; ${replay}`).toBe(200);
      return JSON.parse(text) as Record<string, unknown> & { id: string; token: string };
    };
    const reads = (a: Actor, ds: string) => a.can.has('all') || a.can.has(ds as Ability);
    // The owner, and four users with a random set of abilities each (one custom role).
    const actors: Actor[] = [{ name: 'owner', token: ADMIN, id: '', can: new Set(['all']) }];
    for (let i = 0; i < 4; i++) {
      const can = new Set((Object.keys(ABILITIES) as Ability[]).filter(() => rnd() < 0.5));
      const { id, pat } = await svc2.userWithPat('none', `actor${i}`);
      const caps = mergeCapabilities([...can].map((a) => ABILITIES[a]));
      await ok(svc2.call('POST', '/v2/rbac/roles', { name: `role${i}`, members: [id], ...caps }));
      actors.push({ name: `actor${i}`, token: pat, id, can });
    }
    const owner = actors[0]!;
    // Where a notifier sends names who chose it; its secret names who gave it.
    const notifierBody = (a: Actor, withSecret: boolean, id: string) => ({
      name: `to-${a.name}`,
      properties: {
        customWebhook: {
          url: `${hook.url}/to-${a.name}/${id}`,
          body: '{"m":"{{.MonitorID}}","e":{{jsonObject .MatchedEvent}}}',
          secretHeaders: { Authorization: withSecret ? `Bearer secret-of-${a.name}` : '' },
        },
      },
    });
    let seq = 0;
    const notifiers = new Map<string, { dest: Actor; at: number }>();
    for (let i = 0; i < 3; i++) {
      const n = await ok(svc2.call('POST', '/v2/notifiers', notifierBody(owner, true, 'new')));
      await ok(svc2.call('PUT', `/v2/notifiers/${n.id}`, notifierBody(owner, true, n.id)));
      notifiers.set(n.id, { dest: owner, at: ++seq });
    }
    const QUERIES = ["['alpha']", "['beta']", 'union *', "['alpha'] | union ['beta']"];
    const monitors = new Map<string, { chooser: Actor; at: number }>();
    clock.t = T0;
    for (let i = 0; i < 3; i++) {
      const m = await ok(
        svc2.call('POST', '/v2/monitors', {
          name: `m${i}`,
          type: 'MatchEvent',
          aplQuery: pick(QUERIES),
          notifierIds: [pick([...notifiers.keys()])],
          intervalMinutes: 1,
          rangeMinutes: 1,
        }),
      );
      monitors.set(m.id, { chooser: owner, at: ++seq });
    }
    const tokens = new Map<string, Ability[]>();
    const ingest = await svc2.apiToken({ alpha: { ingest: ['create'] }, beta: { ingest: ['create'] } });
    let seen = 0;
    for (let step = 1; step <= 12; step++) {
      // Tokens for this step's actions, made by the owner with random rights.
      for (let i = 0; i < 2; i++) {
        const holds = (['alpha', 'beta', 'monitors', 'tokens'] as Ability[]).filter(() => rnd() < 0.4);
        const caps = mergeCapabilities(holds.map((a) => ABILITIES[a]));
        tokens.set((await ok(svc2.call('POST', '/v2/tokens', { name: 't', ...caps }))).id, holds);
      }
      // A batch of actions sent together: monitors or notifiers in one batch, never both, so that the order
      // of a rechoice and a redirection is known; tokens and starred queries beside them.
      const onMonitors = rnd() < 0.5;
      const batch: Promise<void>[] = [];
      const touched = new Set<string>();
      for (let k = 0; k < 4; k++) {
        const actor = pick(actors.slice(1));
        const kind = pick(['object', 'object', 'token', 'starred'] as const);
        if (kind === 'object' && onMonitors) {
          const id = pick([...monitors.keys()]);
          if (touched.has(id)) continue;
          touched.add(id);
          const body = {
            name: `m-${step}`,
            type: 'MatchEvent',
            aplQuery: pick(QUERIES),
            notifierIds: [pick([...notifiers.keys()])],
            intervalMinutes: 1,
            rangeMinutes: 1,
          };
          batch.push(
            svc2.call('PUT', `/v2/monitors/${id}`, body, actor.token).then(async (r) => {
              await r.arrayBuffer();
              if (r.status === 200) monitors.set(id, { chooser: actor, at: ++seq });
            }),
          );
        } else if (kind === 'object') {
          const id = pick([...notifiers.keys()]);
          if (touched.has(id)) continue;
          touched.add(id);
          batch.push(
            svc2
              .call('PUT', `/v2/notifiers/${id}`, notifierBody(actor, rnd() < 0.5, id), actor.token)
              .then(async (r) => {
                await r.arrayBuffer();
                if (r.status === 200) notifiers.set(id, { dest: actor, at: ++seq });
              }),
          );
        } else if (kind === 'token') {
          const id = pick([...tokens.keys()]);
          if (touched.has(id)) continue;
          touched.add(id);
          const holds = tokens.get(id)!;
          const may = actor.can.has('tokens') && holds.every((a) => actor.can.has(a));
          const regenerate = rnd() < 0.5;
          batch.push(
            (regenerate
              ? svc2.call(
                  'POST',
                  `/v2/tokens/${id}/regenerate`,
                  { existingTokenExpiresAt: '2099-01-01T00:00:00Z' },
                  actor.token,
                )
              : svc2.call('DELETE', `/v2/tokens/${id}`, undefined, actor.token)
            ).then(async (r) => {
              const text = await r.text();
              expect(
                r.status,
                `${actor.name} ${regenerate ? 'regenerates' : 'deletes'} a token holding ${holds.join(',') || 'nothing'}: ${text}; ${replay}`,
              ).toBe(may ? (regenerate ? 200 : 204) : 403);
              if (may) tokens.delete(id);
            }),
          );
        } else {
          batch.push(
            (async () => {
              const saved = pick(QUERIES);
              const r = await svc2.call(
                'POST',
                '/v2/apl-starred-queries',
                { kind: 'apl', name: `s${step}`, dataset: pick(DATASETS), query: { apl: saved } },
                owner.token,
              );
              await r.arrayBuffer();
              const listed = await svc2.call('GET', '/v2/apl-starred-queries?who=all', undefined, actor.token);
              const items = listed.status === 200 ? ((await listed.json()) as { query: { apl: string } }[]) : [];
              for (const s of items) {
                const mentions = DATASETS.filter((d) => s.query.apl.includes(d) || s.query.apl === 'union *');
                for (const d of mentions)
                  expect(
                    reads(actor, d),
                    `${actor.name} sees a starred query reading ${d}: ${s.query.apl}; ${replay}`,
                  ).toBe(true);
              }
            })(),
          );
        }
      }
      await Promise.all(batch);
      // Events in both datasets, then every monitor's tick of this minute.
      clock.t = T0 + step * MIN + 59_000;
      const at = new Date(T0 + step * MIN - 1_000).toISOString();
      for (const d of DATASETS)
        await ok(svc2.call('POST', `/v1/ingest/${d}`, [{ _time: at, marker: `${d}-${step}` }], ingest));
      await svc2.alerting.scheduler.runDue();
      for (const req of hook.requests.slice(seen)) {
        const [, destName, notifierId] = /^\/to-([^/]+)\/(.+)$/.exec(req.path)!;
        const dest = actors.find((a) => a.name === destName)!;
        const auth = req.headers.authorization;
        expect(
          auth === undefined || auth === '' || auth === `Bearer secret-of-${dest.name}`,
          `a delivery to ${dest.name} carried ${auth}; ${replay}`,
        ).toBe(true);
        const { m } = req.json() as { m: string };
        const chosen = monitors.get(m)!;
        const notifier = notifiers.get(notifierId!)!;
        expect(notifier.dest, `notifier ${notifierId} delivered to ${dest.name}; ${replay}`).toBe(dest);
        for (const d of DATASETS.filter((ds) => req.body.includes(`"${ds}-`))) {
          expect(
            reads(chosen.chooser, d),
            `monitor ${m} chosen by ${chosen.chooser.name} delivered ${d}; ${replay}`,
          ).toBe(true);
          if (notifier.at > chosen.at)
            expect(reads(dest, d), `${dest.name} redirected ${d} from monitor ${m}; ${replay}`).toBe(true);
        }
      }
      seen = hook.requests.length;
    }
    // The runs did deliver: the checks above had something to check.
    expect(hook.requests.length, replay).toBeGreaterThan(10);
  }, 120_000);
});
