/**
 * Users (management.md §4.1): /v2/users, a user's role, the caller as a user (/v2/user, /v1/user), and a
 * user's personal access tokens (/v2/users/{id}/tokens, Ferry's: Axiom makes PATs in its UI only).
 * Nobody can hand out or take over more than they hold: a role granted, and a user acted on, must not
 * have rights beyond the caller's.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { excessRights } from '../../auth/capabilities.js';
import type { Directory, UserRecord } from '../../auth/directory.js';
import { roleRights } from '../../auth/roles.js';
import { canonicalKeys, optionalTime } from '../../bodies/fields.js';
import { forbidden, notFoundError } from '../errors.js';
import { patView, userView } from '../views.js';
import { readUser, requiredName, roleId } from './access-bodies.js';

export function userRoutes(app: FastifyInstance, directory: Directory): void {
  const view = (u: UserRecord) => userView(u, directory.role(u.role));
  const existing = (id: string): UserRecord => {
    const u = directory.user(id);
    if (!u) throw notFoundError(`user "${id}" not found`);
    return u;
  };
  const mayGrantRole = (req: FastifyRequest, role: string) => {
    const r = directory.role(role);
    if (!r) return; // the directory answers 400 naming it
    const excess = excessRights(req.principal.rights, roleRights(r));
    if (excess) throw forbidden(`Forbidden: role "${r.name}" holds a right the caller lacks (${excess})`);
  };
  const mayActOn = (req: FastifyRequest, u: UserRecord) => {
    const excess = excessRights(req.principal.rights, directory.rightsOf(u.id));
    if (excess) throw forbidden(`Forbidden: user "${u.name}" holds a right the caller lacks (${excess})`);
  };

  for (const path of ['/v1/user', '/v2/user']) {
    app.get(path, async (req) => {
      const p = req.principal;
      if (p.kind === 'personal') return view(existing(p.userId));
      // An API token is not a user; it answers as itself so that credential checks still work.
      return { id: p.tokenId, name: p.name, email: '', role: { id: 'none', name: 'none' } };
    });
  }

  app.put('/v2/user', async (req) => {
    const p = req.principal;
    if (p.kind !== 'personal') throw forbidden('Forbidden: an API token is not a user; use a personal access token');
    const b = canonicalKeys(req.body, ['name'], {}, 'user');
    return view(await directory.updateUser(p.userId, { name: requiredName(b.name) }));
  });

  app.get('/v2/users', async () => {
    return directory.users().map(view);
  });

  app.post('/v2/users', async (req) => {
    const input = readUser(req.body);
    mayGrantRole(req, input.role);
    return view(await directory.createUser(input));
  });

  app.get<{ Params: { id: string } }>('/v2/users/:id', async (req) => {
    return view(existing(req.params.id));
  });

  app.delete<{ Params: { id: string } }>('/v2/users/:id', async (req, reply) => {
    mayActOn(req, existing(req.params.id));
    await directory.removeUser(req.params.id);
    return reply.code(204).send();
  });

  // axiom-go's Users.Update: {name}; acting on a user takes every right it holds, as for its role.
  app.put<{ Params: { id: string } }>('/v2/users/:id', async (req) => {
    const user = existing(req.params.id);
    const b = canonicalKeys(req.body, ['name'], {}, 'user');
    mayActOn(req, user);
    return view(await directory.updateUser(user.id, { name: requiredName(b.name) }));
  });

  app.put<{ Params: { id: string } }>('/v2/users/:id/role', async (req) => {
    const user = existing(req.params.id);
    const role = roleId(canonicalKeys(req.body, ['role'], {}, 'role change').role);
    mayActOn(req, user);
    mayGrantRole(req, role);
    return view(await directory.updateUser(user.id, { role }));
  });

  app.get<{ Params: { id: string } }>('/v2/users/:id/tokens', async (req) => {
    return directory.patsOf(existing(req.params.id).id).map((p) => patView(p));
  });

  app.post<{ Params: { id: string } }>('/v2/users/:id/tokens', async (req) => {
    const user = existing(req.params.id);
    mayActOn(req, user);
    const b = canonicalKeys(req.body ?? {}, ['name', 'expiresAt'], {}, 'personal access token');
    const name = b.name === undefined ? 'personal access token' : requiredName(b.name);
    const { record, secret } = await directory.issuePat(user.id, name, optionalTime(b.expiresAt, 'expiresAt'));
    return patView(record, secret);
  });

  app.delete<{ Params: { id: string; tokenId: string } }>('/v2/users/:id/tokens/:tokenId', async (req, reply) => {
    mayActOn(req, existing(req.params.id));
    await directory.revokePat(req.params.id, req.params.tokenId);
    return reply.code(204).send();
  });
}
