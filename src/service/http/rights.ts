/**
 * The one table of what each route needs (management.md §3.3, §4.1, §5). The server refuses to start with
 * a route missing from it, and checks it for every request right after the token, before the body is
 * read: a refused request changes nothing. Handlers check only what depends on the data itself (the
 * datasets a query or monitor reads, rights a caller would hand out).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  type Action,
  canDataset,
  canOrg,
  canQuerySomething,
  canSeeDataset,
  type DatasetCapability,
  type OrgArea,
} from '../auth/capabilities.js';
import { badRequest, forbidden } from './errors.js';

export type Need =
  /** No token: the console's page and files, which hold no data (routes/console.ts). */
  | { public: true }
  /** Any valid token. */
  | { any: true }
  /** A personal access token (a user), whatever its rights: the caller acting on itself. */
  | { user: true }
  | { org: OrgArea; action: Action }
  /** A capability on the dataset named by a path parameter. */
  | { dataset: DatasetCapability; action: Action; param: string }
  /** Any capability on the dataset named by a path parameter (or org datasets:read). */
  | { sees: string }
  /** An API token with ingest:create on the dataset: PATs never ingest (management.md §3.3). */
  | { ingest: string }
  /** The same, for the dataset a header names (OTLP's X-Axiom-Dataset). */
  | { ingestHeader: string }
  /**
   * query:read on every dataset the query reads, which the query engine checks once it has bound the query;
   * here, that the caller may query something at all (a query of no dataset still costs the service).
   */
  | { queries: true }
  /** starredQueries:<action> on the starred query's dataset; the handler checks it once it knows the dataset. */
  | { starred: Action }
  /** Every one of these. */
  | { all: Need[] };

const org = (area: OrgArea, action: Action): Need => ({ org: area, action });

/**
 * A dataset's fields are its data's shape: reading them, or hiding or mapping them, needs query:read on
 * the dataset (and datasets:update to change them), so that a field that exists and one the caller may
 * not read answer alike. Shortening a dataset's retention deletes data: the handler asks trim (or data
 * delete) on the dataset for that.
 */
function datasetRoutes(base: string): Record<string, Need> {
  const readsFields: Need = { dataset: 'query', action: 'read', param: 'id' };
  const changesFields: Need = { all: [org('datasets', 'update'), readsFields] };
  return {
    [`GET ${base}`]: { any: true },
    [`POST ${base}`]: org('datasets', 'create'),
    [`GET ${base}/:id`]: { sees: 'id' },
    [`PUT ${base}/:id`]: org('datasets', 'update'),
    [`DELETE ${base}/:id`]: org('datasets', 'delete'),
    [`POST ${base}/:id/trim`]: { dataset: 'trim', action: 'update', param: 'id' },
    [`GET ${base}/:id/info`]: readsFields,
    [`GET ${base}/:id/fields`]: readsFields,
    [`GET ${base}/:id/fields/:field`]: readsFields,
    [`PUT ${base}/:id/fields/:field`]: changesFields,
    [`GET ${base}/:id/mapfields`]: readsFields,
    [`POST ${base}/:id/mapfields`]: changesFields,
    [`PUT ${base}/:id/mapfields`]: changesFields,
    [`DELETE ${base}/:id/mapfields/:name`]: changesFields,
  };
}

/** The metrics discovery endpoints: what a dataset's series are is its data, as its fields are. */
function metricsInfoRights(base: string): Record<string, Need> {
  const reads: Need = { dataset: 'query', action: 'read', param: 'dataset' };
  return Object.fromEntries(
    [
      `GET ${base}/metrics`,
      `POST ${base}/metrics`,
      `GET ${base}/metrics/:metric/tags`,
      `GET ${base}/metrics/:metric/tags/:tag/values`,
      `GET ${base}/tags`,
      `GET ${base}/tags/:tag/values`,
    ].map((route) => [route, reads]),
  );
}

function crud(base: string, area: OrgArea): Record<string, Need> {
  return {
    [`GET ${base}`]: org(area, 'read'),
    [`POST ${base}`]: org(area, 'create'),
    [`GET ${base}/:id`]: org(area, 'read'),
    [`PUT ${base}/:id`]: org(area, 'update'),
    [`DELETE ${base}/:id`]: org(area, 'delete'),
  };
}

export const ROUTE_RIGHTS: Readonly<Record<string, Need>> = {
  'GET /': { public: true },
  'GET /assets/:file': { public: true },
  ...datasetRoutes('/v1/datasets'),
  ...datasetRoutes('/v2/datasets'),
  'POST /v1/ingest/:dataset': { ingest: 'dataset' },
  'POST /v1/datasets/:dataset/ingest': { ingest: 'dataset' },
  'POST /v1/logs': { ingestHeader: 'x-axiom-dataset' },
  'POST /v1/traces': { ingestHeader: 'x-axiom-dataset' },
  'POST /v1/metrics': { ingestHeader: 'x-axiom-metrics-dataset' },
  ...metricsInfoRights('/v1/query/metrics/info/datasets/:dataset'),
  'POST /v1/query/_apl': { queries: true },
  'POST /v1/query/_mpl': { queries: true },
  'POST /v1/datasets/_apl': { queries: true },
  'POST /v1/datasets/:dataset/query': { dataset: 'query', action: 'read', param: 'dataset' },
  'GET /v1/user': { any: true },
  'GET /v2/user': { any: true },
  'PUT /v2/user': { user: true },
  'GET /v2/users': org('users', 'read'),
  'POST /v2/users': org('users', 'create'),
  'GET /v2/users/:id': org('users', 'read'),
  'DELETE /v2/users/:id': org('users', 'delete'),
  'PUT /v2/users/:id': org('users', 'update'),
  'PUT /v2/users/:id/role': org('users', 'update'),
  'GET /v2/users/:id/tokens': org('users', 'read'),
  'POST /v2/users/:id/tokens': org('users', 'update'),
  'DELETE /v2/users/:id/tokens/:tokenId': org('users', 'update'),
  ...crud('/v2/rbac/roles', 'rbac'),
  ...crud('/v2/rbac/groups', 'rbac'),
  'GET /v2/tokens': org('apiTokens', 'read'),
  'POST /v2/tokens': org('apiTokens', 'create'),
  'GET /v2/tokens/:id': org('apiTokens', 'read'),
  'DELETE /v2/tokens/:id': org('apiTokens', 'delete'),
  'POST /v2/tokens/:id/regenerate': org('apiTokens', 'update'),
  ...crud('/v2/monitors', 'monitors'),
  'GET /v2/monitors/:id/history': org('monitors', 'read'),
  'GET /v2/monitors/:id/runs': org('monitors', 'read'),
  ...crud('/v2/notifiers', 'notifiers'),
  ...crud('/v2/annotations', 'annotations'),
  // A list is filtered to what the caller may read; the others depend on the query's dataset.
  'GET /v2/apl-starred-queries': { any: true },
  'POST /v2/apl-starred-queries': { starred: 'create' },
  'GET /v2/apl-starred-queries/:id': { starred: 'read' },
  'PUT /v2/apl-starred-queries/:id': { starred: 'update' },
  'DELETE /v2/apl-starred-queries/:id': { starred: 'delete' },
};

/** Whether a route takes no token (the console's page and files). */
export function isPublic(need: Need | undefined): boolean {
  return need !== undefined && 'public' in need;
}

/** Whether a route manages the service (its changes go into the audit trail), rather than ingesting or querying. */
export function isManagement(need: Need): boolean {
  if ('all' in need) return need.all.some(isManagement);
  return (
    !('public' in need) &&
    !('ingest' in need) &&
    !('ingestHeader' in need) &&
    !('queries' in need) &&
    !('dataset' in need && need.dataset === 'query')
  );
}

/** The need of a route, by method and path pattern; HEAD is GET without the body. */
export function needOf(method: string, url: string): Need | undefined {
  return ROUTE_RIGHTS[`${method === 'HEAD' ? 'GET' : method} ${url}`];
}

/**
 * Throws 403 naming what is missing, when the caller lacks what the route needs. `isSystem` tells the
 * datasets the service keeps for itself (the audit trail, the monitor runs): no token writes or changes
 * them, whatever its rights.
 */
export function checkNeed(req: FastifyRequest, need: Need, isSystem: (dataset: string) => boolean): void {
  if ('all' in need) {
    for (const n of need.all) checkNeed(req, n, isSystem);
    return;
  }
  if ('public' in need) return;
  const kept = (ds: string) => {
    if (isSystem(ds)) throw forbidden(`Forbidden: dataset "${ds}" is kept by the service itself and cannot be changed`);
  };
  const p = req.principal;
  const param = (name: string) => (req.params as Record<string, string>)[name] ?? '';
  const header = (name: string) => {
    const v = req.headers[name];
    if (typeof v !== 'string' || v === '') throw badRequest(`send the dataset in the ${name} header`);
    return v;
  };
  if ('org' in need) {
    if (!canOrg(p, need.org, need.action))
      throw forbidden(`Forbidden: this token lacks the ${need.org}|${need.action} capability`);
    // The service's own datasets (any case): answered alike whether one exists.
    if (need.org === 'datasets' && need.action !== 'read') kept(param('id'));
  } else if ('dataset' in need) {
    const ds = param(need.param);
    if (need.action !== 'read') kept(ds);
    if (!canDataset(p, ds, need.dataset, need.action))
      throw forbidden(`Forbidden: this token lacks the ${need.dataset}|${need.action} capability on dataset "${ds}"`);
  } else if ('sees' in need) {
    const ds = param(need.sees);
    if (!canSeeDataset(p, ds)) throw forbidden(`Forbidden: this token has no access to dataset "${ds}"`);
  } else if ('ingest' in need || 'ingestHeader' in need) {
    if (p.kind === 'personal')
      throw forbidden(
        'Forbidden: personal access tokens cannot ingest; create an API token with the ingest capability (POST /v2/tokens)',
      );
    const ds = 'ingest' in need ? param(need.ingest) : header(need.ingestHeader);
    kept(ds);
    if (!canDataset(p, ds, 'ingest', 'create'))
      throw forbidden(`Forbidden: this token lacks the ingest|create capability on dataset "${ds}"`);
  } else if ('queries' in need) {
    if (!canQuerySomething(p))
      throw forbidden(
        'Forbidden: this token holds the query|read capability on no dataset, and any query needs it (even one that reads none)',
      );
  } else if ('user' in need) {
    if (p.kind !== 'personal') throw forbidden('Forbidden: an API token is not a user; use a personal access token');
  }
}

/**
 * Makes every route name its need here (a route without one stops the server at start) and checks it on
 * every request. Install before the routes and after the hook that sets req.principal.
 */
export function installRights(app: FastifyInstance, isSystem: (dataset: string) => boolean): void {
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (!needOf(method, route.url))
        throw new Error(`route ${method} ${route.url} has no entry in ROUTE_RIGHTS (src/service/http/rights.ts)`);
    }
  });
  app.addHook('onRequest', async (req) => {
    const need = req.routeOptions.url === undefined ? undefined : needOf(req.method, req.routeOptions.url);
    if (need) checkNeed(req, need, isSystem);
  });
}
