/**
 * `ferry users`: the users of a running service, their base roles and their personal access tokens,
 * through the HTTP API with the owner's token by default (the daemon holds the database).
 */
import { lookupTable } from '../util/lookup.js';
import type { FerryConfig } from './config.js';
import { renderRows } from './query-output.js';
import {
  CommandError,
  commandArgs,
  requestService,
  SERVICE_FLAGS,
  ServiceCallError,
  type ServiceTarget,
  subcommand,
  targetFor,
} from './service-client.js';

interface User {
  id: string;
  name: string;
  email: string;
  role: { id: string; name: string };
}
interface Pat {
  id: string;
  name: string;
  createdAt: string;
  expiresAt: string | null;
  token?: string;
}

/** A user by id or email. */
async function findUser(t: ServiceTarget, ref: string): Promise<User> {
  const users = await requestService<User[]>(t, 'listing users', 'GET', '/v2/users');
  const found = users.find((u) => u.id === ref) ?? users.find((u) => u.email.toLowerCase() === ref.toLowerCase());
  if (!found) throw new CommandError(`no user with id or email "${ref}"`, 1);
  return found;
}

/** A role by id or name. */
async function findRole(t: ServiceTarget, ref: string): Promise<string> {
  const roles = await requestService<{ id: string; name: string }[]>(t, 'listing roles', 'GET', '/v2/rbac/roles');
  const found = roles.find((r) => r.id === ref) ?? roles.find((r) => r.name.toLowerCase() === ref.toLowerCase());
  if (!found)
    throw new CommandError(`no role with id or name "${ref}" (built in: owner, admin, user, read-only, none)`, 1);
  return found.id;
}

export async function usersCommand(
  argv: string[],
  loadConfig: (file?: string) => FerryConfig,
  out: (s: string) => void,
): Promise<void> {
  const { values, positionals } = commandArgs({
    args: argv,
    options: {
      ...SERVICE_FLAGS,
      email: { type: 'string' },
      role: { type: 'string' },
      name: { type: 'string' },
      expires: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const { sub, args } = subcommand(
    'users',
    positionals,
    lookupTable({ list: 0, create: 1, role: 2, token: 1, tokens: 1, revoke: 2, remove: 1 }),
  );
  if (sub === 'create' && !values.email) throw new CommandError('users create needs --email', 2);
  const t = targetFor(values, loadConfig);
  try {
    await run(t, sub, args, values, out);
  } catch (e) {
    if (e instanceof ServiceCallError) throw new CommandError(e.message, 1);
    throw e;
  }
}

async function run(
  t: ServiceTarget,
  sub: string,
  args: string[],
  values: { email?: string; role?: string; name?: string; expires?: string },
  out: (s: string) => void,
): Promise<void> {
  switch (sub) {
    case 'list': {
      const users = await requestService<User[]>(t, 'listing users', 'GET', '/v2/users');
      const rows = [];
      for (const u of users) {
        const pats = await requestService<Pat[]>(
          t,
          'listing tokens',
          'GET',
          `/v2/users/${encodeURIComponent(u.id)}/tokens`,
        );
        rows.push([u.id, u.name, u.email, u.role.name, pats.length]);
      }
      out(renderRows('users', ['id', 'name', 'email', 'role', 'tokens'], rows));
      return;
    }
    case 'create': {
      const role = await findRole(t, values.role ?? 'user');
      const u = await requestService<User>(t, 'creating the user', 'POST', '/v2/users', {
        name: args[0],
        email: values.email,
        role,
      });
      out(`created user ${u.name} <${u.email}> with role ${u.role.name}: ${u.id}\n`);
      return;
    }
    case 'role': {
      const user = await findUser(t, args[0]!);
      const role = await findRole(t, args[1]!);
      const u = await requestService<User>(
        t,
        'setting the role',
        'PUT',
        `/v2/users/${encodeURIComponent(user.id)}/role`,
        {
          role,
        },
      );
      out(`${u.name} now has role ${u.role.name}\n`);
      return;
    }
    case 'token': {
      const user = await findUser(t, args[0]!);
      const pat = await requestService<Pat>(
        t,
        'issuing the token',
        'POST',
        `/v2/users/${encodeURIComponent(user.id)}/tokens`,
        {
          ...(values.name ? { name: values.name } : {}),
          ...(values.expires ? { expiresAt: values.expires } : {}),
        },
      );
      process.stderr.write(`personal access token ${pat.id} for ${user.name}; it is shown only this once:\n`);
      out(`${pat.token}\n`);
      return;
    }
    case 'tokens': {
      const user = await findUser(t, args[0]!);
      const pats = await requestService<Pat[]>(
        t,
        'listing tokens',
        'GET',
        `/v2/users/${encodeURIComponent(user.id)}/tokens`,
      );
      out(
        renderRows(
          'tokens',
          ['id', 'name', 'created', 'expires'],
          pats.map((p) => [p.id, p.name, p.createdAt, p.expiresAt ?? 'never']),
        ),
      );
      return;
    }
    case 'revoke': {
      const user = await findUser(t, args[0]!);
      await requestService(
        t,
        'revoking the token',
        'DELETE',
        `/v2/users/${encodeURIComponent(user.id)}/tokens/${encodeURIComponent(args[1]!)}`,
      );
      out(`revoked token ${args[1]} of ${user.name}\n`);
      return;
    }
    case 'remove': {
      const user = await findUser(t, args[0]!);
      await requestService(t, 'removing the user', 'DELETE', `/v2/users/${encodeURIComponent(user.id)}`);
      out(`removed user ${user.name} <${user.email}> and revoked its tokens\n`);
      return;
    }
  }
}
