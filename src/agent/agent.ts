/**
 * The agent daemon: the embedded service (when `service.enabled`), the pipeline of the config, and a small
 * HTTP API with /metrics and /health. SIGHUP reloads the pipeline: the old one stops the way a shutdown
 * does (everything read is queued, checkpoints written) without waiting for deliveries, and the new one
 * takes over the same queues and checkpoints, so nothing is lost or read twice.
 *
 * The store is imported only when the service is enabled: a remote-only agent never loads DuckDB.
 */
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { FerryConfig } from '../config/load.js';
import type { RunningService } from '../service/service.js';
import { renderMetrics } from './metrics.js';
import { Pipeline } from './pipeline/pipeline.js';

export class Agent {
  private stopping = false;

  private constructor(
    private cfg: FerryConfig,
    private pipeline: Pipeline,
    private readonly log: Logger,
    readonly service: RunningService | undefined,
    private readonly api: Server | undefined,
  ) {}

  static async start(cfg: FerryConfig, log: Logger): Promise<Agent> {
    let service: RunningService | undefined;
    if (cfg.service.enabled) {
      const { startService } = await import('../service/service.js');
      service = await startService(cfg.service, log);
    }
    let pipeline: Pipeline;
    try {
      pipeline = await Pipeline.start(cfg.agent, { log, store: service?.store });
    } catch (e) {
      await service?.close();
      throw e;
    }
    let agent: Agent | undefined;
    let api: Server | undefined;
    if (cfg.agent.api.enabled) {
      // Two read-only GETs: node:http is enough, and keeps a remote-only agent small.
      api = createServer((req, res) => {
        const path = (req.url ?? '/').split('?')[0];
        if (req.method !== 'GET') {
          res.writeHead(405, { 'content-type': 'application/json', allow: 'GET' }).end(JSON.stringify({ code: 405, message: 'only GET' }));
        } else if (path === '/metrics') {
          res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(renderMetrics(agent?.pipeline));
        } else if (path === '/health') {
          const body = agent?.health() ?? { status: 'starting' };
          res.writeHead(body.status === 'ok' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        } else {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 404, message: `${path} not found (try /metrics or /health)` }));
        }
      });
      const { host, port } = cfg.agent.api.listen;
      await new Promise<void>((resolve, reject) => {
        api!.once('error', reject);
        api!.listen(port, host, () => resolve());
      }).catch(async (e: unknown) => {
        await pipeline.stop(Date.now(), false);
        await service?.close();
        throw e;
      });
    }
    agent = new Agent(cfg, pipeline, log, service, api);
    log.info({ sources: cfg.agent.sources.length, transforms: cfg.agent.transforms.length, sinks: cfg.agent.sinks.length, api: agent.apiUrl }, 'agent running');
    return agent;
  }

  get apiUrl(): string | undefined {
    const addr = this.api?.address();
    return addr && typeof addr === 'object' ? `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}` : undefined;
  }

  health(): { status: string; sinks: { name: string; queuedBatches: number; lastError?: string }[] } {
    return {
      status: this.stopping ? 'stopping' : 'ok',
      sinks: this.pipeline.sinks.map((s) => ({ name: s.o.name, queuedBatches: s.queue.depthRecords, ...(s.lastError ? { lastError: s.lastError } : {}) })),
    };
  }

  /** Resolves when the sources have read all they will (stdin at EOF). */
  finished(): Promise<void> {
    return this.pipeline.finished();
  }

  /** Replaces the pipeline with the one of `next`. The service section needs a restart to change. */
  async reload(next: FerryConfig): Promise<void> {
    if (JSON.stringify(next.service) !== JSON.stringify(this.cfg.service) || JSON.stringify(next.agent.api) !== JSON.stringify(this.cfg.agent.api)) {
      this.log.warn('service and agent.api settings change only with a restart; reloading the pipeline only');
    }
    await this.pipeline.stop(Date.now() + next.agent.shutdownTimeoutMs, false);
    try {
      this.pipeline = await Pipeline.start(next.agent, { log: this.log, store: this.service?.store });
    } catch (e) {
      this.log.error({ err: e }, 'the new config failed to start; going on with the old one');
      this.pipeline = await Pipeline.start(this.cfg.agent, { log: this.log, store: this.service?.store });
      throw e;
    }
    this.cfg = { ...next, service: this.cfg.service };
    this.log.info({ sources: next.agent.sources.length, sinks: next.agent.sinks.length }, 'config reloaded');
  }

  /**
   * Shutdown: stop reading, queue what was read, deliver until the deadline, then close everything.
   * Resolves true when everything read was delivered.
   */
  async stop(): Promise<boolean> {
    this.stopping = true;
    const delivered = await this.pipeline.stop(Date.now() + this.cfg.agent.shutdownTimeoutMs, true);
    await new Promise<void>((r) => (this.api ? this.api.close(() => r()) : r()));
    await this.service?.close();
    return delivered;
  }
}
