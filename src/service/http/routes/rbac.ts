/**
 * Roles and groups (management.md §4): /v2/rbac/roles and /v2/rbac/groups. A caller may only make a role
 * or a group that grants rights it holds itself, else rbac rights would be every right.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { excessRights, type Rights, unionRights } from '../../auth/capabilities.js';
import type { Directory } from '../../auth/directory.js';
import { roleRights } from '../../auth/roles.js';
import { forbidden, notFoundError } from '../errors.js';
import { groupView, roleView } from '../views.js';
import { readGroup, readRole } from './access-bodies.js';

export function rbacRoutes(app: FastifyInstance, directory: Directory): void {
  const mayGrant = (req: FastifyRequest, what: string, rights: Rights) => {
    const excess = excessRights(req.principal.rights, rights);
    if (excess) throw forbidden(`Forbidden: ${what} would grant a right the caller lacks (${excess})`);
  };
  const groupRights = (roles: string[]) =>
    unionRights(roles.map((id) => directory.role(id)).flatMap((r) => (r ? [roleRights(r)] : [])));

  app.get('/v2/rbac/roles', async () => {
    return directory.roles().map(roleView);
  });

  app.post('/v2/rbac/roles', async (req) => {
    const input = readRole(req.body);
    mayGrant(req, `role "${input.name}"`, { all: false, ...input });
    return roleView(await directory.createRole(input));
  });

  app.get<{ Params: { id: string } }>('/v2/rbac/roles/:id', async (req) => {
    const r = directory.role(req.params.id);
    if (!r) throw notFoundError(`role "${req.params.id}" not found`);
    return roleView(r);
  });

  app.put<{ Params: { id: string } }>('/v2/rbac/roles/:id', async (req) => {
    const current = directory.role(req.params.id);
    if (!current) throw notFoundError(`role "${req.params.id}" not found`);
    const input = readRole(req.body);
    // Both what the role held and what it will hold: else a caller could strip an owner-like role.
    mayGrant(req, `role "${current.name}"`, roleRights(current));
    mayGrant(req, `role "${input.name}"`, { all: false, ...input });
    return roleView(await directory.updateRole(req.params.id, input));
  });

  app.delete<{ Params: { id: string } }>('/v2/rbac/roles/:id', async (req, reply) => {
    const current = directory.role(req.params.id);
    if (!current) throw notFoundError(`role "${req.params.id}" not found`);
    mayGrant(req, `role "${current.name}"`, roleRights(current));
    await directory.deleteRole(req.params.id);
    return reply.code(204).send();
  });

  app.get('/v2/rbac/groups', async () => {
    return directory.groups().map(groupView);
  });

  app.post('/v2/rbac/groups', async (req) => {
    const input = readGroup(req.body);
    mayGrant(req, `group "${input.name}"`, groupRights(input.roles));
    return groupView(await directory.createGroup(input));
  });

  app.get<{ Params: { id: string } }>('/v2/rbac/groups/:id', async (req) => {
    const g = directory.group(req.params.id);
    if (!g) throw notFoundError(`group "${req.params.id}" not found`);
    return groupView(g);
  });

  app.put<{ Params: { id: string } }>('/v2/rbac/groups/:id', async (req) => {
    const current = directory.group(req.params.id);
    if (!current) throw notFoundError(`group "${req.params.id}" not found`);
    const input = readGroup(req.body);
    mayGrant(req, `group "${current.name}"`, groupRights(current.roles));
    mayGrant(req, `group "${input.name}"`, groupRights(input.roles));
    return groupView(await directory.updateGroup(req.params.id, input));
  });

  app.delete<{ Params: { id: string } }>('/v2/rbac/groups/:id', async (req, reply) => {
    const current = directory.group(req.params.id);
    if (!current) throw notFoundError(`group "${req.params.id}" not found`);
    mayGrant(req, `group "${current.name}"`, groupRights(current.roles));
    await directory.deleteGroup(req.params.id);
    return reply.code(204).send();
  });
}
