/** API tokens: /v2/tokens. The secret is in the response of create and regenerate only. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  type DatasetCapabilities,
  excessRights,
  type OrgCapabilities,
  type Principal,
  principalId,
  validateCapabilities,
} from '../../auth/capabilities.js';
import { validateViewCapabilities, type ViewCapabilities } from '../../auth/roles.js';
import type { TokenRecord, TokenStore } from '../../auth/token-store.js';
import { badRequest, forbidden, notFoundError } from '../errors.js';
import { tokenView } from '../views.js';

interface CreateToken {
  name: string;
  description?: string;
  expiresAt?: string | null;
  datasetCapabilities?: DatasetCapabilities;
  orgCapabilities?: OrgCapabilities;
  viewCapabilities?: ViewCapabilities | null;
}

const createSchema = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    expiresAt: { type: ['string', 'null'] },
    datasetCapabilities: { type: ['object', 'null'] },
    orgCapabilities: { type: ['object', 'null'] },
    viewCapabilities: { type: ['object', 'null'] },
  },
} as const;

/** Absent, null and Go's zero time all mean "never expires". */
function expiry(value: string | null | undefined, what: string): string | null {
  if (value === undefined || value === null || value === '' || value.startsWith('0001-01-01')) return null;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw badRequest(`${what} must be an RFC 3339 date-time, got "${value}"`);
  return new Date(ms).toISOString();
}

/**
 * A token that expires cannot make a token (or keep one alive) past its own expiry: otherwise a
 * short-lived token could mint itself a permanent successor.
 */
function checkLifetime(creator: Principal, expiresAt: string | null, what: string): void {
  if (creator.kind !== 'api' || !creator.expiresAt) return;
  if (expiresAt === null || Date.parse(expiresAt) > Date.parse(creator.expiresAt)) {
    throw forbidden(
      `Forbidden: ${what} would outlive the token making it, which expires at ${creator.expiresAt}; give an expiry no later than that`,
    );
  }
}

/**
 * Acting on a token (deleting it, regenerating it, setting its old secret's expiry) needs every right the
 * token holds, as making it did: else a holder of apiTokens rights alone could cut off, or keep alive,
 * tokens more powerful than itself.
 */
function checkHolds(caller: Principal, t: TokenRecord, what: string): void {
  const excess = excessRights(caller.rights, {
    all: false,
    datasetCapabilities: t.datasetCapabilities,
    orgCapabilities: t.orgCapabilities,
  });
  if (excess)
    throw forbidden(`Forbidden: to ${what} this token takes every right it holds, and the caller lacks ${excess}`);
}

export function tokenRoutes(app: FastifyInstance, tokens: TokenStore): void {
  const create = async (creatorReq: FastifyRequest, body: CreateToken) => {
    const problem =
      validateCapabilities(body.datasetCapabilities, body.orgCapabilities) ??
      validateViewCapabilities(body.viewCapabilities);
    if (problem) throw badRequest(problem);
    const datasetCapabilities = body.datasetCapabilities ?? {};
    const orgCapabilities = body.orgCapabilities ?? {};
    const excess = excessRights(creatorReq.principal.rights, { all: false, datasetCapabilities, orgCapabilities });
    if (excess) throw forbidden(`Forbidden: a token cannot grant a right its creator lacks (${excess})`);
    const expiresAt = expiry(body.expiresAt, 'expiresAt');
    checkLifetime(creatorReq.principal, expiresAt, 'the new token');
    return tokens.create({
      name: body.name,
      description: body.description ?? '',
      datasetCapabilities,
      orgCapabilities,
      viewCapabilities: body.viewCapabilities ?? {},
      expiresAt,
      createdBy: principalId(creatorReq.principal),
    });
  };

  app.get('/v2/tokens', async () => {
    return tokens.list().map((t) => tokenView(t));
  });

  app.post<{ Body: CreateToken }>('/v2/tokens', { schema: { body: createSchema } }, async (req) => {
    const { record, secret } = await create(req, req.body);
    return tokenView(record, secret);
  });

  app.get<{ Params: { id: string } }>('/v2/tokens/:id', async (req) => {
    const t = tokens.get(req.params.id);
    if (!t) throw notFoundError(`token "${req.params.id}" not found`);
    return tokenView(t);
  });

  app.delete<{ Params: { id: string } }>('/v2/tokens/:id', async (req, reply) => {
    const t = tokens.get(req.params.id);
    if (!t) throw notFoundError(`token "${req.params.id}" not found`);
    checkHolds(req.principal, t, 'delete');
    if (!(await tokens.delete(req.params.id))) throw notFoundError(`token "${req.params.id}" not found`);
    return reply.code(204).send();
  });

  app.post<{
    Params: { id: string };
    Body: { existingTokenExpiresAt?: string; newToken?: CreateToken; newTokenExpiresAt?: string | null };
  }>(
    '/v2/tokens/:id/regenerate',
    {
      schema: {
        body: {
          type: 'object',
          required: ['existingTokenExpiresAt'],
          properties: {
            existingTokenExpiresAt: { type: 'string' },
            newToken: createSchema,
            newTokenExpiresAt: { type: ['string', 'null'] },
          },
        },
      },
    },
    async (req) => {
      const old = tokens.get(req.params.id);
      if (!old) throw notFoundError(`token "${req.params.id}" not found`);
      checkHolds(req.principal, old, 'regenerate');
      const base: CreateToken = req.body.newToken ?? {
        name: old.name,
        description: old.description,
        datasetCapabilities: old.datasetCapabilities,
        orgCapabilities: old.orgCapabilities,
        viewCapabilities: old.viewCapabilities,
      };
      const body = { ...base, expiresAt: req.body.newToken?.expiresAt ?? req.body.newTokenExpiresAt ?? null };
      // The old secret's time may be shortened, never lengthened: an expired token stays expired.
      const asked = expiry(req.body.existingTokenExpiresAt, 'existingTokenExpiresAt') ?? new Date().toISOString();
      const oldExpiry = old.expiresAt !== null && Date.parse(old.expiresAt) < Date.parse(asked) ? old.expiresAt : asked;
      checkLifetime(req.principal, oldExpiry, "the regenerated token's old secret");
      const { record, secret } = await create(req, body);
      await tokens.setExpiry(old.id, oldExpiry);
      return tokenView(record, secret);
    },
  );
}
