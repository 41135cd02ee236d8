/** Starts and stops the embedded event service: store, tokens, retention and the HTTP listener. */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config/load.js';
import { resolveAdminToken } from './auth/admin-token.js';
import { TokenStore } from './auth/token-store.js';
import { buildServer } from './http/server.js';
import { RetentionTask } from './retention-task.js';
import { EventStore } from './store/event-store.js';

export interface RunningService {
  app: FastifyInstance;
  store: EventStore;
  url: string;
  adminToken: string;
  close(): Promise<void>;
}

export async function startService(cfg: ServiceConfig, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const store = await EventStore.open({
    dataDir: cfg.dataDir,
    memoryLimitBytes: cfg.memoryLimitBytes,
    checkpointThresholdBytes: cfg.checkpointThresholdBytes,
    threads: cfg.threads,
    maxFieldsPerDataset: cfg.maxFieldsPerDataset,
    defaultRetentionDays: cfg.retention.defaultDays,
    maxObjectBytes: 16 * 1024 * 1024,
    onBackgroundError: (err, what) => log.error({ err }, `${what} failed`),
  });
  const tokens = await TokenStore.open(store.db);
  const adminToken = resolveAdminToken(cfg.dataDir, env, log);
  const app = buildServer({
    store, tokens, adminToken, logger: log,
    limits: { maxBodyBytes: cfg.maxBodyBytes, maxDecompressedBytes: cfg.maxDecompressedBytes },
    queryTimeoutMs: cfg.queryTimeoutMs,
    queryLimits: cfg.queryLimits,
  });
  const retention = new RetentionTask(store, cfg.retention.checkIntervalMs, log);
  try {
    await app.listen({ host: cfg.listen.host, port: cfg.listen.port });
  } catch (e) {
    await store.close();
    throw e;
  }
  retention.start();
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : cfg.listen.port;
  const host = cfg.listen.host.includes(':') ? `[${cfg.listen.host}]` : cfg.listen.host;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  log.info({ url, dataDir: cfg.dataDir }, 'event service listening');
  let closing: Promise<void> | undefined;
  return {
    app, store, url, adminToken,
    close() {
      // In-flight requests finish first (fastify.close waits for them), then the store checkpoints and closes.
      closing ??= (async () => {
        await retention.stop();
        // A long query must not hold the shutdown up: it is interrupted and answered 503.
        store.stopReads();
        log.debug('closing http');
        await app.close();
        log.debug('closing store');
        await store.close();
        log.debug('closed');
      })();
      return closing;
    },
  };
}
