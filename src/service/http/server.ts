/**
 * The embedded event service's HTTP server: management (/v2), ingest and query (/v1), and the local console
 * (/ and /assets) on one listener.
 * Every response carries X-Axiom-Trace-Id; every error is JSON {code, message}.
 */
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { QueryEngine } from '../query/engine.js';
import type { Alerting } from '../monitors/alerting.js';
import type { TokenStore } from '../auth/token-store.js';
import type { Directory } from '../auth/directory.js';
import type { EventStore } from '../store/event-store.js';
import type { BodyLimits } from '../../ingest/body.js';
import { Authenticator } from './authenticate.js';
import { toHttp } from './errors.js';
import { installRights, isManagement, isPublic, needOf } from './rights.js';
import { audited, auditRecord, type AuditRecord } from '../audit/audit-trail.js';
import type { EventLog } from '../store/event-log.js';
import { datasetRoutes } from './routes/datasets.js';
import { ingestRoutes } from './routes/ingest.js';
import { otlpRoutes } from './routes/otlp.js';
import { metricsInfoRoutes, metricsIngestRoutes, mplRoutes } from './routes/metrics.js';
import { MplQueries } from '../query/mpl-queries.js';
import { MetricsStore } from '../metrics/metrics-store.js';
import { queryRoutes } from './routes/query.js';
import { monitorRoutes } from './routes/monitors.js';
import { notifierRoutes } from './routes/notifiers.js';
import { annotationRoutes } from './routes/annotations.js';
import { tokenRoutes } from './routes/tokens.js';
import { userRoutes } from './routes/users.js';
import { rbacRoutes } from './routes/rbac.js';
import { starredRoutes } from './routes/starred.js';
import { consoleRoutes } from './routes/console.js';
import type { DocumentTable } from '../store/documents.js';
import type { StarredQuery } from '../starred/starred-query.js';
import { collectAfterLargeResults } from '../store/native-memory.js';

export interface ServerDeps {
  store: EventStore;
  tokens: TokenStore;
  directory: Directory;
  starred: DocumentTable<StarredQuery>;
  audit: EventLog<AuditRecord>;
  adminToken: string;
  logger: Logger;
  limits: BodyLimits;
  engine: QueryEngine;
  alerting: Alerting;
  /** Made from the store when not given. */
  metrics?: MetricsStore;
  /** MPL queries; made from the store (no time limit) when not given. */
  mpl?: MplQueries;
}

/** The longest path segment (a dataset, field or token id) the router takes. */
const MAX_PATH_SEGMENT = 2048;

export function buildServer(deps: ServerDeps): FastifyInstance {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One log line per request would dominate the logs at ingest rates; errors are logged by the handler.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomBytes(16).toString('hex'),
    // Management bodies are small JSON; ingest bodies bypass this limit (streamed with their own limits).
    bodyLimit: 10 * 1024 * 1024,
    return503OnClosing: true,
    // Dataset names run to 128 characters and field names further; the router's own limit is 100.
    routerOptions: { maxParamLength: MAX_PATH_SEGMENT },
    // A body's types are the client's: a number where a string belongs is refused (as Axiom's Go server
    // refuses it), not turned into its text, nor `false` into ["false"] where a list belongs.
    ajv: { customOptions: { coerceTypes: false } },
    // What the router refuses before any route runs answers in the same {code, message} shape.
    frameworkErrors: (err, req, reply) => {
      const status = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400;
      const path = req.url.split('?')[0]!.slice(0, 200);
      const message =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? `a segment of the path ${path}… is longer than ${MAX_PATH_SEGMENT} characters`
          : err.code === 'FST_ERR_BAD_URL'
            ? `the path ${path} is not valid percent-encoding`
            : err.message;
      void (reply as FastifyReply)
        .code(status)
        .header('X-Axiom-Trace-Id', req.id)
        .type('application/json')
        .send({ code: status, message });
    },
  });
  const auth = new Authenticator(deps.adminToken, deps.tokens, deps.directory);
  // @axiomhq/js sends Content-Type: application/json with an empty body on DELETE; that means "no body".
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '') done(null, undefined);
    else void parseJson(req, body as string, done); // callback style: done() answers
  });
  app.decorateRequest('principal', null as never);
  app.decorateRequest('failure', undefined as never);
  app.decorateRequest('hidden', false);

  // Credentials first, before the body is read or validated: an anonymous client learns nothing about
  // what it sent and cannot make the server parse bodies.
  app.addHook('onRequest', async (req, reply) => {
    reply.header('X-Axiom-Trace-Id', req.id);
    const route = req.routeOptions.url;
    if (route !== undefined && isPublic(needOf(req.method, route))) return;
    req.principal = auth.principalOf(req.headers.authorization);
  });
  installRights(app, (ds) => deps.store.isSystemDataset(ds));
  app.addHook('onSend', async (_req, reply) => {
    // While closing, the server no longer listens; telling keep-alive clients to close lets close() finish
    // as soon as the in-flight requests are answered.
    if (!app.server.listening) reply.header('connection', 'close');
  });

  // The trail gets what ended each audited request, whoever asked and whatever answered.
  app.addHook('onResponse', async (req, reply) => {
    collectAfterLargeResults();
    const route = req.routeOptions.url;
    const need = route === undefined ? undefined : needOf(req.method, route);
    if (!audited(req.method, reply.statusCode, !!need && isManagement(need), req.hidden)) return;
    deps.audit.add(auditRecord(req.principal, req.method, route, req.url, reply.statusCode, req.failure, req.hidden));
  });

  app.setErrorHandler((err, req, reply) => {
    const { status, message, headers, log, hidden } = toHttp(err);
    req.failure = message;
    req.hidden = hidden === true;
    if (status >= 500 || log) req.log.error({ err, url: req.url }, 'request failed');
    else req.log.debug({ status, message, url: req.url }, 'request rejected');
    void reply.code(status).headers(headers).type('application/json').send({ code: status, message });
  });
  app.setNotFoundHandler((req, reply) => {
    void reply
      .code(404)
      .type('application/json')
      .send({ code: 404, message: `route ${req.method} ${req.url.split('?')[0]} not found` });
  });

  datasetRoutes(app, deps.store);
  queryRoutes(app, deps.store, deps.engine);
  monitorRoutes(app, deps.alerting);
  notifierRoutes(app, deps.alerting);
  annotationRoutes(app, deps.alerting, deps.store);
  tokenRoutes(app, deps.tokens);
  userRoutes(app, deps.directory);
  rbacRoutes(app, deps.directory);
  starredRoutes(app, deps.starred, deps.engine);
  consoleRoutes(app);
  void app.register(async (scope) => ingestRoutes(scope, deps.store, deps.limits));
  void app.register(async (scope) => otlpRoutes(scope, deps.store, deps.limits));
  const metrics = deps.metrics ?? MetricsStore.of(deps.store);
  void app.register(async (scope) => metricsIngestRoutes(scope, deps.store, metrics, deps.limits));
  const mpl = deps.mpl ?? new MplQueries(deps.store);
  metricsInfoRoutes(app, metrics, mpl);
  mplRoutes(app, mpl);
  return app;
}
