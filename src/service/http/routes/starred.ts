/**
 * Starred queries (management.md §5): /v2/apl-starred-queries. Each is seen through the starredQueries
 * capability on its dataset ("*" for one without) and query:read on every dataset its query reads: a list
 * leaves out the others, and one the caller may not read answers 404 as if it did not exist. Saved queries are the team's to read; changing or deleting
 * one is for the user who saved it, or for whoever may manage users (users:update).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Action, canDataset, canOrg, principalId } from '../../auth/capabilities.js';
import type { DocumentTable } from '../../store/documents.js';
import type { QueryEngine } from '../../query/engine.js';
import { readStarredBody, type StarredQuery, starredView } from '../../starred/starred-query.js';
import { FieldError } from '../../bodies/fields.js';
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

export function starredRoutes(app: FastifyInstance, table: DocumentTable<StarredQuery>, engine: QueryEngine): void {
  const may = (req: FastifyRequest, s: { dataset?: string }, action: Action) =>
    canDataset(req.principal, s.dataset ?? '*', 'starredQueries', action);
  const need = (req: FastifyRequest, s: { dataset?: string }, action: Action) => {
    if (!may(req, s, action))
      throw forbidden(
        `Forbidden: this token lacks the starredQueries|${action} capability on ${s.dataset ? `dataset "${s.dataset}"` : '"*" (a query saved without a dataset)'}`,
      );
  };
  /**
   * What a saved query reads: found when it was saved, or now for one saved before. One that does not bind
   * (a typo, a dataset since deleted) may mean anything: "*", seen by who may query every dataset.
   */
  const readsOf = async (s: StarredQuery) => s.reads ?? (await engine.datasetsRead(s.query.apl, () => true)) ?? ['*'];
  /** The text of a query says what it looks for: it is seen by who may query what it reads, whatever its label. */
  const mayRead = async (req: FastifyRequest, s: StarredQuery) =>
    may(req, s, 'read') &&
    (s.who === principalId(req.principal) ||
      (await readsOf(s)).every((ds) => canDataset(req.principal, ds, 'query', 'read')));
  const visible = async (req: FastifyRequest, id: string): Promise<StarredQuery> => {
    const s = table.get(id);
    if (!s) throw notFoundError(`starred query "${id}" not found`);
    if (!(await mayRead(req, s))) throw hidden(`starred query "${id}"`);
    return s;
  };
  const mayChange = (req: FastifyRequest, s: StarredQuery, action: Action) => {
    need(req, s, action);
    if (s.who !== principalId(req.principal) && !canOrg(req.principal, 'users', 'update'))
      throw forbidden(`Forbidden: starred query "${s.name}" was saved by someone else`);
  };
  /** The datasets a query to save reads, bound as the caller: one over a dataset it may not query is a 403. */
  const readsAsCaller = async (req: FastifyRequest, apl: string) =>
    (await engine.datasetsRead(apl, (ds) => canDataset(req.principal, ds, 'query', 'read'))) ?? ['*'];

  app.get<{ Querystring: Query }>('/v2/apl-starred-queries', async (req) => {
    const limit = count(req.query.limit, 'limit', 100, 1, 1000);
    const offset = count(req.query.offset, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
    const me = principalId(req.principal);
    const who = req.query.who;
    if (who && who !== 'team' && who !== 'all' && who !== me && !canOrg(req.principal, 'users', 'read'))
      throw forbidden("Forbidden: reading another user's starred queries needs the users|read capability");
    const qs = req.query.qs?.toLowerCase();
    const readable: StarredQuery[] = [];
    for (const s of table.list()) if (await mayRead(req, s)) readable.push(s);
    return readable
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
    const reads = await readsAsCaller(req, input.query.apl);
    const s: StarredQuery = {
      id: randomUUID(),
      kind: 'apl',
      ...input,
      who: principalId(req.principal),
      createdAt: new Date().toISOString(),
      reads,
    };
    return starredView(await table.put(s));
  });

  app.get<{ Params: { id: string } }>('/v2/apl-starred-queries/:id', async (req) =>
    starredView(await visible(req, req.params.id)),
  );

  app.put<{ Params: { id: string } }>('/v2/apl-starred-queries/:id', async (req) => {
    const current = await visible(req, req.params.id);
    mayChange(req, current, 'update');
    const input = readStarredBody(req.body);
    need(req, input, 'update');
    const reads = await readsAsCaller(req, input.query.apl);
    // An update racing a delete does not bring the query back.
    const next = await table.update(current.id, (s) => {
      const { dataset: _dropped, reads: _before, ...rest } = s;
      return { ...rest, ...input, reads };
    });
    if (!next) throw notFoundError(`starred query "${req.params.id}" not found`);
    return starredView(next);
  });

  app.delete<{ Params: { id: string } }>('/v2/apl-starred-queries/:id', async (req, reply) => {
    mayChange(req, await visible(req, req.params.id), 'delete');
    if (!(await table.delete(req.params.id))) throw notFoundError(`starred query "${req.params.id}" not found`);
    return reply.code(204).send();
  });
}
