/** `ferry users` against a running service: users, roles and personal access tokens from the shell. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFerry, startTestService, type TestService } from '../../support/helpers.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc?.stop());

const ferry = (args: string[]) => runFerry(svc.url, ['users', ...args]);

describe('ferry users', () => {
  it('creates a user, sets its role, issues a token that works, revokes it and removes the user', async () => {
    const created = await ferry(['create', 'Grace Hopper', '--email', 'grace@example.com', '--role', 'read-only']);
    expect(created.code, created.stderr).toBe(0);
    const id = /: ([0-9a-f-]{36})\n$/.exec(created.stdout)![1]!;
    expect(created.stdout).toBe(`created user Grace Hopper <grace@example.com> with role read-only: ${id}\n`);

    const token = await ferry(['token', 'grace@example.com', '--name', 'laptop']);
    expect(token.code).toBe(0);
    expect(token.stderr).toMatch(
      /^personal access token [0-9a-f-]{36} for Grace Hopper; it is shown only this once:\n$/,
    );
    const secret = token.stdout.trim();
    expect(secret).toMatch(/^xapt-[0-9a-f-]{36}$/);
    const me = await svc.call('GET', '/v2/user', undefined, secret);
    expect(await me.json()).toMatchObject({ id, role: { id: 'read-only' } });
    expect((await svc.call('GET', '/v2/notifiers', undefined, secret)).status).toBe(200);
    expect((await svc.call('POST', '/v2/notifiers', { name: 'n' }, secret)).status).toBe(403);

    expect((await ferry(['role', id, 'none'])).stdout).toBe('Grace Hopper now has role none\n');
    expect((await svc.call('GET', '/v2/notifiers', undefined, secret)).status).toBe(403);

    const list = await ferry(['list']);
    expect(list.stdout).toMatch(/^id\s+name\s+email\s+role\s+tokens\n/);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+Grace Hopper\\s+grace@example.com\\s+none\\s+1\\n`));
    expect(list.stdout).toMatch(/owner\s+Owner\s+owner\s+0\n/);

    const tokens = await ferry(['tokens', id]);
    const tokenId = /\n([0-9a-f-]{36})\s+laptop\s+\S+\s+never\n/.exec(tokens.stdout)?.[1];
    expect(tokenId, tokens.stdout).toBeDefined();
    expect(tokens.stdout).not.toContain(secret);
    expect((await ferry(['revoke', id, tokenId!])).stdout).toBe(`revoked token ${tokenId} of Grace Hopper\n`);
    expect((await svc.call('GET', '/v2/user', undefined, secret)).status).toBe(401);

    expect((await ferry(['remove', 'GRACE@example.com'])).stdout).toBe(
      'removed user Grace Hopper <grace@example.com> and revoked its tokens\n',
    );
    expect((await svc.call('GET', `/v2/users/${id}`)).status).toBe(404);
  });

  it('says what is wrong in one line: exit 2 for usage, 1 for what the service refuses', async () => {
    const noEmail = await ferry(['create', 'X']);
    expect([noEmail.code, noEmail.stderr]).toEqual([2, 'ferry: users create needs --email\n']);
    const unknown = await ferry(['remove', 'nobody@example.com']);
    expect([unknown.code, unknown.stderr]).toEqual([1, 'ferry: no user with id or email "nobody@example.com"\n']);
    const owner = await ferry(['remove', 'owner']);
    expect(owner.code).toBe(1);
    expect(owner.stderr).toBe(
      'ferry: removing the user failed (400): the owner created at first start cannot be removed (its token is the admin token)\n',
    );
    const badRole = await ferry(['create', 'Y', '--email', 'y@example.com', '--role', 'wizard']);
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain('no role with id or name "wizard"');
    expect((await ferry(['fly'])).code).toBe(2);
  });
});
