/**
 * Users, roles and groups: who may do what, through personal access tokens, with rights that add up
 * across the base role, roles and groups and apply at once; nobody hands out more than they hold.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Axiom } from '@axiomhq/js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('logs');
  await svc.createDataset('secrets');
});
afterAll(async () => svc.stop());

type Json = Record<string, unknown> & { id: string; token: string; message: string };
async function ok(r: Response | Promise<Response>, status = 200): Promise<Json> {
  const res = await r;
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return (text ? JSON.parse(text) : {}) as Json;
}

const userWithPat = (role: string) => svc.userWithPat(role);

const query = (token: string, dataset: string) =>
  svc.call('POST', '/v1/query/_apl?format=tabular', { apl: `['${dataset}'] | count` }, token);
const notifier = (token: string) =>
  svc.call(
    'POST',
    '/v2/notifiers',
    { name: 'n', properties: { slack: { slackUrl: 'https://hooks.example.com/x' } } },
    token,
  );

describe('users', () => {
  it('the owner is a user; users are listed, made, read and removed with the official client reading them', async () => {
    const client = new Axiom({ token: ADMIN, url: svc.url });
    expect(await client.users.current()).toEqual({
      id: 'owner',
      name: 'Owner',
      email: '',
      role: { id: 'owner', name: 'owner' },
    });
    const made = await ok(svc.call('POST', '/v2/users', { name: 'Ada', email: 'ada@example.com', role: 'read-only' }));
    expect(made).toEqual({
      id: made.id,
      name: 'Ada',
      email: 'ada@example.com',
      role: { id: 'read-only', name: 'read-only' },
    });
    expect((await client.users.list()).map((u: { name: string }) => u.name)).toContain('Ada');
    expect(await client.users.get(made.id)).toEqual(made);
    // One email, one user; a role that does not exist is named.
    const again = await svc.call('POST', '/v2/users', { name: 'Ada 2', email: 'ADA@example.com', role: 'user' });
    expect(again.status).toBe(409);
    const badRole = await ok(svc.call('POST', '/v2/users', { name: 'X', email: 'x@example.com', role: 'nope' }), 400);
    expect(badRole.message).toContain('no role "nope"');
    expect((await ok(svc.call('POST', '/v2/users', { email: 'y@example.com', role: 'user' }), 400)).message).toMatch(
      /^name is required/,
    );
    // CreateUserRequest is {name, email, role}: no user without an email.
    for (const email of [undefined, '', '  ']) {
      const r = await ok(svc.call('POST', '/v2/users', { name: 'Nomail', email, role: 'user' }), 400);
      expect(r).toEqual({ code: 400, message: 'email is required (the address of the user)' });
    }
    // axiom-go's Users.Update renames a user: PUT /v2/users/{id} {name}.
    const renamed = await ok(svc.call('PUT', `/v2/users/${made.id}`, { name: 'Ada Lovelace' }));
    expect(renamed).toEqual({ ...made, name: 'Ada Lovelace' });
    expect(await client.users.get(made.id)).toEqual(renamed);
    expect((await ok(svc.call('PUT', `/v2/users/${made.id}`, { name: '' }), 400)).message).toMatch(/^name/);
    await ok(svc.call('PUT', '/v2/users/nobody', { name: 'x' }), 404);
    await ok(svc.call('DELETE', `/v2/users/${made.id}`), 204);
    await ok(svc.call('GET', `/v2/users/${made.id}`), 404);
    // The first owner stays: its token is the admin token.
    expect((await ok(svc.call('DELETE', '/v2/users/owner'), 400)).message).toContain('cannot be removed');
    expect((await ok(svc.call('PUT', '/v2/users/owner/role', { role: 'user' }), 400)).message).toContain(
      'keeps the owner role',
    );
  });

  it('a PAT acts as its user with the user role’s rights; PUT /v2/user renames the caller, not an API token', async () => {
    const { id, pat } = await userWithPat('read-only');
    const me = await ok(svc.call('GET', '/v2/user', undefined, pat));
    expect(me).toMatchObject({ id, role: { id: 'read-only' } });
    expect((await query(pat, 'logs')).status).toBe(200);
    expect((await notifier(pat)).status).toBe(403);
    expect((await svc.call('POST', '/v2/tokens', { name: 't' }, pat)).status).toBe(403);
    expect(await ok(svc.call('PUT', '/v2/user', { name: 'Renamed' }, pat))).toMatchObject({ id, name: 'Renamed' });
    const apiToken = await svc.apiToken();
    expect((await svc.call('PUT', '/v2/user', { name: 'x' }, apiToken)).status).toBe(403);
    // Changing the base role applies to the PAT at once.
    await ok(svc.call('PUT', `/v2/users/${id}/role`, { role: 'none' }));
    expect((await query(pat, 'logs')).status).toBe(403);
    await ok(svc.call('PUT', `/v2/users/${id}/role`, { role: { id: 'user' } }));
    expect((await notifier(pat)).status).toBe(200);
  });

  it('removing a user revokes its PATs at once; the API tokens it made keep working (they belong to the org)', async () => {
    const { id, pat } = await userWithPat('user');
    const other = await ok(svc.call('POST', `/v2/users/${id}/tokens`, { name: 'second' }));
    expect((await ok(svc.call('GET', `/v2/users/${id}/tokens`))) as unknown as unknown[]).toHaveLength(2);
    const made = await ok(
      svc.call('POST', '/v2/tokens', { name: 'ci', datasetCapabilities: { logs: { query: ['read'] } } }, pat),
    );
    // A PAT is shown once: listed without its secret, and only its hash is on disk.
    const listed = (await ok(svc.call('GET', `/v2/users/${id}/tokens`))) as unknown as Record<string, unknown>[];
    expect(listed.every((t) => t.token === undefined)).toBe(true);
    await svc.store.db.run('CHECKPOINT');
    const onDisk = readFileSync(join(svc.dataDir, 'ferry.duckdb'));
    expect(onDisk.includes(Buffer.from(pat))).toBe(false);
    expect(onDisk.includes(Buffer.from(createHash('sha256').update(pat).digest('hex')))).toBe(true);
    await ok(svc.call('DELETE', `/v2/users/${id}/tokens/${other.id}`), 204);
    expect((await svc.call('GET', '/v2/user', undefined, other.token)).status).toBe(401);
    expect((await svc.call('GET', '/v2/user', undefined, pat)).status).toBe(200);
    await ok(svc.call('DELETE', `/v2/users/${id}`), 204);
    expect((await svc.call('GET', '/v2/user', undefined, pat)).status).toBe(401);
    expect((await query(made.token, 'logs')).status).toBe(200);
  });
});

describe('roles and groups', () => {
  it('rights are the union of the base role, roles naming the user and its groups’ roles, and apply at once', async () => {
    const { id, pat } = await userWithPat('none');
    expect((await query(pat, 'logs')).status).toBe(403);
    const reader = await ok(
      svc.call('POST', '/v2/rbac/roles', {
        name: 'logs-reader',
        description: 'reads logs',
        datasetCapabilities: { logs: { query: ['read'] } },
      }),
    );
    const notifying = await ok(
      svc.call('POST', '/v2/rbac/roles', { name: 'notifying', orgCapabilities: { notifiers: ['create', 'read'] } }),
    );
    const group = await ok(
      svc.call('POST', '/v2/rbac/groups', { name: 'team', members: [id], roles: [reader.id, notifying.id] }),
    );
    expect(group).toEqual({
      id: group.id,
      name: 'team',
      description: '',
      members: [id],
      roles: [reader.id, notifying.id],
      isManaged: false,
    });
    expect((await query(pat, 'logs')).status).toBe(200);
    expect((await query(pat, 'secrets')).status).toBe(403);
    expect((await notifier(pat)).status).toBe(200);
    // Out of the group: both rights go; as a direct member of one role, that one comes back.
    await ok(svc.call('PUT', `/v2/rbac/groups/${group.id}`, { name: 'team', members: [], roles: [reader.id] }));
    expect((await query(pat, 'logs')).status).toBe(403);
    expect((await notifier(pat)).status).toBe(403);
    await ok(svc.call('PUT', `/v2/rbac/roles/${notifying.id}`, { ...notifying, members: [id] }));
    expect((await notifier(pat)).status).toBe(200);
    expect(await ok(svc.call('GET', `/v2/rbac/roles/${notifying.id}`))).toMatchObject({ members: [id] });
  });

  it('lists the built-in roles, which cannot change; names are unique, even when requests race', async () => {
    const roles = (await ok(svc.call('GET', '/v2/rbac/roles'))) as unknown as { id: string }[];
    expect(roles.slice(0, 5).map((r) => r.id)).toEqual(['owner', 'admin', 'user', 'read-only', 'none']);
    expect((await svc.call('PUT', '/v2/rbac/roles/admin', { name: 'admin' })).status).toBe(400);
    expect((await svc.call('DELETE', '/v2/rbac/roles/user')).status).toBe(400);
    expect((await svc.call('POST', '/v2/rbac/roles', { name: 'Admin' })).status).toBe(409);
    const racing = await Promise.all(
      Array.from({ length: 8 }, () => svc.call('POST', '/v2/rbac/roles', { name: 'racer' })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    const sameEmail = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        svc.call('POST', '/v2/users', { name: `twin ${i}`, email: 'twin@example.com', role: 'none' }),
      ),
    );
    expect(sameEmail.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    const groups = await Promise.all(
      Array.from({ length: 8 }, () => svc.call('POST', '/v2/rbac/groups', { name: 'racers' })),
    );
    expect(groups.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    // A role some user holds as its base role cannot go; once nobody does, it can.
    const custom = await ok(
      svc.call('POST', '/v2/rbac/roles', { name: 'based', orgCapabilities: { users: ['read'] } }),
    );
    const { id } = await userWithPat(custom.id);
    expect((await svc.call('DELETE', `/v2/rbac/roles/${custom.id}`)).status).toBe(409);
    await ok(svc.call('PUT', `/v2/users/${id}/role`, { role: 'none' }));
    await ok(svc.call('DELETE', `/v2/rbac/roles/${custom.id}`), 204);
    await ok(svc.call('GET', `/v2/rbac/roles/${custom.id}`), 404);
    const bad = await ok(svc.call('POST', '/v2/rbac/roles', { name: 'b', orgCapabilities: { users: ['fly'] } }), 400);
    expect(bad.message).toContain('orgCapabilities.users: action "fly" not allowed');
    expect((await svc.call('POST', '/v2/rbac/groups', { name: 'g', members: ['ghost'] })).status).toBe(400);
  });

  it('nobody grants what they lack: an admin cannot make an owner, a billing role, or act on an owner', async () => {
    const admin = await userWithPat('admin');
    const owner2 = await userWithPat('owner');
    expect((await svc.call('POST', '/v2/users', { name: 'o', email: 'o@x.io', role: 'owner' }, admin.pat)).status).toBe(
      403,
    );
    expect(
      (await svc.call('POST', '/v2/rbac/roles', { name: 'billing', orgCapabilities: { billing: ['read'] } }, admin.pat))
        .status,
    ).toBe(403);
    expect((await svc.call('POST', '/v2/rbac/groups', { name: 'owners', roles: ['owner'] }, admin.pat)).status).toBe(
      403,
    );
    expect((await svc.call('PUT', `/v2/users/${owner2.id}/role`, { role: 'none' }, admin.pat)).status).toBe(403);
    expect((await svc.call('POST', `/v2/users/${owner2.id}/tokens`, {}, admin.pat)).status).toBe(403);
    expect((await svc.call('DELETE', `/v2/users/${owner2.id}`, undefined, admin.pat)).status).toBe(403);
    // Within its rights an admin manages users, and its tokens are bounded by them.
    const made = await ok(svc.call('POST', '/v2/users', { name: 'r', email: 'r@x.io', role: 'read-only' }, admin.pat));
    await ok(svc.call('DELETE', `/v2/users/${made.id}`, undefined, admin.pat), 204);
    expect(
      (await svc.call('POST', '/v2/tokens', { name: 't', orgCapabilities: { billing: ['read'] } }, admin.pat)).status,
    ).toBe(403);
    // A user (no rbac create) cannot make roles at all.
    const plain = await userWithPat('user');
    expect((await svc.call('POST', '/v2/rbac/roles', { name: 'mine' }, plain.pat)).status).toBe(403);
  });

  it('keeps users, roles, groups and PATs across a restart', async () => {
    const s = await startTestService();
    const dir = s.dataDir;
    try {
      const role = await ok(
        s.call('POST', '/v2/rbac/roles', { name: 'kept', orgCapabilities: { monitors: ['read'] } }),
      );
      const user = await ok(s.call('POST', '/v2/users', { name: 'K', email: 'k@x.io', role: 'none' }));
      await ok(s.call('POST', '/v2/rbac/groups', { name: 'kg', members: [user.id], roles: [role.id] }));
      const pat = await ok(s.call('POST', `/v2/users/${user.id}/tokens`, {}));
      await s.close();
      const again = await startTestService({}, dir);
      try {
        expect((await again.call('GET', '/v2/monitors', undefined, pat.token)).status).toBe(200);
        expect((await again.call('GET', '/v2/notifiers', undefined, pat.token)).status).toBe(403);
        expect(((await ok(again.call('GET', '/v2/rbac/groups'))) as unknown as unknown[]).length).toBe(1);
      } finally {
        await again.stop();
      }
    } catch (e) {
      await s.stop().catch(() => undefined);
      throw e;
    }
  });
});
