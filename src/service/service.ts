/** Starts and stops the embedded event service: store, tokens, retention and the HTTP listener. */
import { MplQueries } from './query/mpl-queries.js';
import { join } from 'node:path';
import { queryFunctions } from './query/functions.js';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ServiceConfig } from './config.js';
import { resolveAdminToken } from './auth/admin-token.js';
import { TokenStore } from './auth/token-store.js';
import { Directory } from './auth/directory.js';
import { DocumentTable } from './store/documents.js';
import type { StarredQuery } from './starred/starred-query.js';
import { auditTrail } from './audit/audit-trail.js';
import type { EventLog } from './store/event-log.js';
import { buildServer } from './http/server.js';
import { RetentionTask } from './retention-task.js';
import { EventStore } from './store/event-store.js';
import { DAEMON_POOL_THREADS } from './store/connection-plan.js';
import { QueryEngine } from './query/engine.js';
import { Alerting } from './monitors/alerting.js';
import type { Clock } from './monitors/scheduler.js';
import { DuckdbMemoryGauge } from './store/memory-gauge.js';

export interface RunningService {
  app: FastifyInstance;
  store: EventStore;
  alerting: Alerting;
  url: string;
  adminToken: string;
  /** The datasets the service writes about itself: the audit trail and the monitor runs. */
  records: EventLog<object>[];
  /** Those with records they could not write: what /health shows (degraded). */
  recordFailures(): RecordFailure[];
  /** The database's reopenings after fatal errors: what /health shows (degraded while one runs). */
  database(): DatabaseHealth;
  close(): Promise<void>;
}

export interface RecordFailure {
  dataset: string;
  failedRecords: number;
  lastFailure?: { at: string; error: string };
}

export interface DatabaseHealth {
  reopening: boolean;
  reopens: number;
  /** What DuckDB holds in memory, by its own count, at the last reading (every 5 s). */
  memoryBytes?: number;
  lastFatal?: { at: string; error: string };
}

export interface ServiceOptions {
  /** The clock monitors are scheduled by (tests walk a schedule with their own). */
  clock?: Clock;
  /** DuckDB's settings stay changeable: only for tests that inject its faults (SET debug_checkpoint_abort). */
  settingsUnlocked?: boolean;
}

export async function startService(
  cfg: ServiceConfig,
  log: Logger,
  env: NodeJS.ProcessEnv = process.env,
  o: ServiceOptions = {},
): Promise<RunningService> {
  const store = await EventStore.open({
    dataDir: cfg.dataDir,
    memoryLimitBytes: cfg.memoryLimitBytes,
    checkpointThresholdBytes: cfg.checkpointThresholdBytes,
    threads: cfg.threads,
    maxFieldsPerDataset: cfg.maxFieldsPerDataset,
    defaultRetentionDays: cfg.retention.defaultDays,
    maxObjectBytes: 16 * 1024 * 1024,
    functions: await queryFunctions(cfg.jsBudget),
    settingsUnlocked: o.settingsUnlocked,
    // Reads are let go on for as long as one may run before a due checkpoint holds new ones back.
    checkpointPatienceMs: cfg.queryTimeoutMs > 0 ? cfg.queryTimeoutMs : undefined,
    onBackgroundError: (err, what) => log.error({ err }, `${what} failed`),
  });
  const { connections } = store;
  if (!connections.enough)
    log.warn(
      {
        UV_THREADPOOL_SIZE: connections.threads,
        queryConnections: connections.queries,
        catalogConnections: connections.catalog,
        ingestConnections: connections.ingest,
      },
      `libuv's thread pool has ${connections.threads} threads, fewer than the ${connections.wantedThreads} the store's connections want (every DuckDB statement holds one while it runs, and one is left free): it opens ${connections.queries} for queries, ${connections.catalog} for the catalog and ${connections.ingest} for ingest, so they wait for each other sooner; start ferry with UV_THREADPOOL_SIZE=${connections.wantedThreads} or more (npm start, systemd/ferry.service and the Docker image set ${DAEMON_POOL_THREADS})`,
    );
  store.db.onReopen = ({ phase, error }) => {
    if (phase === 'start')
      log.error(
        { error },
        'the database hit a fatal error and is being reopened; requests meanwhile answer 503 (nothing committed is lost)',
      );
    else if (phase === 'done') log.warn({ error }, 'the database was reopened after a fatal error');
    else log.error({ error }, 'the database could not be reopened; trying again');
  };
  const tokens = await TokenStore.open(store.db);
  const directory = await Directory.open(store.db);
  const starred = await DocumentTable.open<StarredQuery>(store.db, 'ferry_starred_queries');
  const audit = auditTrail(store, log);
  const adminToken = resolveAdminToken(cfg.dataDir, env, log);
  const engine = new QueryEngine(store, { timeoutMs: cfg.queryTimeoutMs, limits: cfg.queryLimits });
  const mpl = new MplQueries(store, { timeoutMs: cfg.queryTimeoutMs, limits: cfg.queryLimits });
  const alerting = await Alerting.open(store, engine, tokens, directory, log, {
    monitors: cfg.monitors,
    notifiers: cfg.notifiers,
    outboxPath: join(cfg.dataDir, 'outbox', 'mail.ndjson'),
    clock: o.clock,
    mpl,
  });
  const app = buildServer({
    store,
    tokens,
    directory,
    starred,
    audit,
    adminToken,
    logger: log,
    engine,
    mpl,
    alerting,
    limits: { maxBodyBytes: cfg.maxBodyBytes, maxDecompressedBytes: cfg.maxDecompressedBytes },
  });
  const retention = new RetentionTask(store, cfg.retention.checkIntervalMs, log);
  try {
    // The service's own datasets exist from the start: a query on them answers empty, not 404.
    await audit.ensureDataset();
    await alerting.scheduler.runLog.ensureDataset();
    await app.listen({ host: cfg.listen.host, port: cfg.listen.port });
  } catch (e) {
    await store.close();
    throw e;
  }
  retention.start();
  alerting.start();
  const memory = new DuckdbMemoryGauge(store.db);
  memory.start();
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : cfg.listen.port;
  const host = cfg.listen.host.includes(':') ? `[${cfg.listen.host}]` : cfg.listen.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  log.info({ url, dataDir: cfg.dataDir }, 'event service listening');
  const records: EventLog<object>[] = [audit, alerting.scheduler.runLog];
  let closing: Promise<void> | undefined;
  return {
    app,
    store,
    alerting,
    url,
    adminToken,
    records,
    recordFailures: () =>
      records
        .filter((r) => r.failedRecords > 0)
        .map((r) => ({ dataset: r.dataset, failedRecords: r.failedRecords, lastFailure: r.lastFailure })),
    database: () => ({
      reopening: store.db.reopening,
      reopens: store.db.reopens,
      ...(memory.bytes !== undefined ? { memoryBytes: memory.bytes } : {}),
      ...(store.db.lastFatal ? { lastFatal: store.db.lastFatal } : {}),
    }),
    close() {
      // In-flight requests finish first (fastify.close waits for them), then the store checkpoints and closes.
      closing ??= (async () => {
        memory.stop();
        log.debug('stopping retention');
        await retention.stop();
        // A long query must not hold the shutdown up: it is interrupted and answered 503.
        store.stopReads();
        // Monitor runs in progress end (their queries interrupted) and are recorded before the store closes.
        log.debug('stopping monitors');
        await alerting.close();
        log.debug('closing http');
        // Idle keep-alive connections (a browser with the console open, a client's pool) hold nothing in
        // flight: closed now, not after their keep-alive timeout, which held a shutdown up for a minute.
        app.server.closeIdleConnections();
        await app.close();
        await audit.flush();
        log.debug('closing store');
        await store.close();
        log.debug('closed');
      })();
      return closing;
    },
  };
}
