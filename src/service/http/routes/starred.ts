/**
 * Starred queries (management.md §5): /v2/apl-starred-queries. Each is seen through the starredQueries
 * capability on its dataset ("*" for one without): a list leaves out the others, and one the caller may
 * not read answers 404 as if it did not exist. Saved queries are the team's to read; changing or deleting
 * one is for the user who saved it, or for whoever may manage users (users:update).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Action, canDataset, canOrg, principalId } from '../../auth/capabilities.js';
import type { DocumentTable } from '../../store/documents.js';
import { readStarredBody, type StarredQuery, starredView } from '../../starred/starred-query.js';
import { FieldError } from '../body-fields.js';
import { hidden } from '../../store/errors.js';
import { forbidden, notFoundError } from '../errors.js';

type Query = { limit?: string; offset?: string; dataset?: string; who?: string; qs?: string };

function count(v: string | undefined, field: string, fallback: number, min: number, max: number): number {
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new FieldError(field, `must be an integer from ${min} to ${max}`);
  return n;
}

export function starredRoutes(app: FastifyInstance, table: DocumentTable<StarredQuery>): void {
  const may = (req: FastifyRequest, s: { dataset?: string }, action: Action) =>
    canDataset(req.principal, s.dataset ?? '*', 'starredQueries', action);
  const need = (req: FastifyRequest, s: { dataset?: string }, action: Action) => {
    if (!may(req, s, action))
      throw forbidden(
        `Forbidden: this token lacks the starredQueries|${action} capability on ${s.dataset ? `dataset "${s.dataset}"` : '"*" (a query saved without a dataset)'}`,
      );
  };
  const visible = (req: FastifyRequest, id: string): StarredQuery => {
    const s = table.get(id);
    if (!s) throw notFoundError(`starred query "${id}" not found`);
    if (!may(req, s, 'read')) throw hidden(`starred query "${id}"`);
    return s;
  };
  const mayChange = (req: FastifyRequest, s: StarredQuery, action: Action) => {
    need(req, s, action);
    if (s.who !== principalId(req.principal) && !canOrg(req.principal, 'users', 'update'))
      throw forbidden(`Forbidden: starred query "${s.name}" was saved by someone else`);
  };

  app.get<{ Querystring: Query }>('/v2/apl-starred-queries', async (req) => {
    const limit = count(req.query.limit, 'limit', 100, 1, 1000);
    const offset = count(req.query.offset, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const me = principalId(req.principal);
    const who = req.query.who;
    if (who && who !== 'team' && who !== 'all' && who !== me && !canOrg(req.principal, 'users', 'read'))
      throw forbidden("Forbidden: reading another user's starred queries needs the users|read capability");
    const qs = req.query.qs?.toLowerCase();
    return table
      .list()
      .filter((s) => may(req, s, 'read'))
      .filter((s) => (who === 'all' ? true : who === 'team' ? s.who !== me : s.who === (who || me)))
      .filter((s) => !req.query.dataset || s.dataset === req.query.dataset)
      .filter((s) => !qs || s.name.toLowerCase().includes(qs) || s.query.apl.toLowerCase().includes(qs))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
      .slice(offset, offset + limit)
      .map(starredView);
  });

  app.post('/v2/apl-starred-queries', async (req) => {
    const input = readStarredBody(req.body);
    need(req, input, 'create');
    const s: StarredQuery = {
      id: randomUUID(),
      kind: 'apl',
      ...input,
      who: principalId(req.principal),
      createdAt: new Date().toISOString(),
    };
    return starredView(await table.put(s));
  });

  app.get<{ Params: { id: string } }>('/v2/apl-starred-queries/:id', async (req) =>
    starredView(visible(req, req.params.id)),
  );

  app.put<{ Params: { id: string } }>('/v2/apl-starred-queries/:id', async (req) => {
    const current = visible(req, req.params.id);
    mayChange(req, current, 'update');
    const input = readStarredBody(req.body);
    need(req, input, 'update');
    // An update racing a delete does not bring the query back.
    const next = await table.update(current.id, (s) => {
      const { dataset: _dropped, ...rest } = s;
      return { ...rest, ...input };
    });
    if (!next) throw notFoundError(`starred query "${req.params.id}" not found`);
    return starredView(next);
  });

  app.delete<{ Params: { id: string } }>('/v2/apl-starred-queries/:id', async (req, reply) => {
    mayChange(req, visible(req, req.params.id), 'delete');
    if (!(await table.delete(req.params.id))) throw notFoundError(`starred query "${req.params.id}" not found`);
    return reply.code(204).send();
  });
}
