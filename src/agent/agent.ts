/**
 * The agent daemon: the embedded service (when `service.enabled`), the pipeline of the config, and a small
 * HTTP API (api.ts: /metrics, /health, /components, /tap). SIGHUP reloads the pipeline: the old one stops the way a shutdown
 * does (everything read is queued, checkpoints written) without waiting for deliveries, and the new one
 * takes over the same queues and checkpoints, so nothing is lost or read twice.
 *
 * The store is imported only when the service is enabled: a remote-only agent never loads DuckDB.
 */
import type { Logger } from 'pino';
import type { AgentConfig } from './config.js';
import type { ServiceConfig } from '../service/config.js';
import type { DatabaseHealth, RecordFailure, RunningService } from '../service/service.js';
import { reloadSmtp } from '../service/smtp-reload.js';
import { serviceHealth } from '../service/health.js';
import { CounterBook } from './counters.js';
import { AgentApi } from './api.js';
import { ActivitySummary } from './activity-summary.js';
import { componentStats, type ComponentStats } from './component-stats.js';
import { TapHub } from './pipeline/taps.js';
import { outputName } from './pipeline/topology.js';
import { Pipeline } from './pipeline/pipeline.js';
import type { SinkState } from './delivery/sink-health.js';

/** What the daemon runs: the agent's pipeline, and the embedded service when enabled. */
export interface DaemonConfig {
  logLevel: string;
  /** Unset: text when stderr is a terminal, JSON otherwise. */
  logFormat?: 'text' | 'json';
  service: ServiceConfig;
  agent: AgentConfig;
}

export interface AgentHealth {
  /** `ok`; `degraded` (200): a sink retrying or its queue not recording deliveries, a file source reading no file; `failing` (503): a sink refused or stopped; `stopping` (503). */
  status: 'ok' | 'degraded' | 'failing' | 'stopping' | 'starting';
  /** The last SIGHUP's failure (an invalid config, a pipeline that would not start), until one succeeds. */
  reload?: { error: string; at: string };
  sources: { name: string; files?: number; warnings?: string[] }[];
  sinks: {
    name: string;
    state: SinkState;
    queuedBatches: number;
    lastError?: string;
    /** Why the sink's queue cannot record deliveries (its disk), while it cannot: degraded. */
    queueError?: string;
    since?: string;
    failedAttempts?: number;
  }[];
  /** Datasets the service writes about itself with records it could not write (the audit trail, monitor runs). */
  records?: RecordFailure[];
  /** The database's reopenings after fatal errors, once there was one. */
  database?: DatabaseHealth;
}

export class Agent {
  private stopping = false;
  private activity!: ActivitySummary;
  /** Why the last SIGHUP did not take, until one does. */
  private reloadFailure: { error: string; at: string } | undefined;

  private constructor(
    private cfg: DaemonConfig,
    private pipeline: Pipeline,
    private readonly log: Logger,
    readonly service: RunningService | undefined,
    private readonly api: AgentApi | undefined,
    private readonly counters: CounterBook,
    readonly taps: TapHub,
  ) {}

  get pipelineNow(): Pipeline {
    return this.pipeline;
  }

  components(): ComponentStats[] {
    return componentStats(this.pipeline, this.cfg.agent);
  }

  tappable(): { names: string[]; withOutputs: Map<string, string[]> } {
    const a = this.cfg.agent;
    const withOutputs = new Map(
      a.transforms.filter((t) => t.outputs).map((t) => [t.name, t.outputs!.map((o) => outputName(t.name, o))]),
    );
    const names = [
      ...a.sources.map((s) => s.name),
      ...a.transforms.flatMap((t) => withOutputs.get(t.name) ?? [t.name]),
    ];
    return { names, withOutputs };
  }

  static async start(cfg: DaemonConfig, log: Logger): Promise<Agent> {
    const counters = new CounterBook();
    const taps = new TapHub();
    let service: RunningService | undefined;
    if (cfg.service.enabled) {
      const { startService } = await import('../service/service.js');
      service = await startService(cfg.service, log);
    }
    let pipeline: Pipeline;
    try {
      pipeline = await Pipeline.start(cfg.agent, { log, store: service?.store, counters, taps });
    } catch (e) {
      await service?.close();
      throw e;
    }
    let agent: Agent | undefined;
    let api: AgentApi | undefined;
    if (cfg.agent.api.enabled) {
      api = new AgentApi(() => agent);
      const { host, port } = cfg.agent.api.listen;
      await new Promise<void>((resolve, reject) => {
        api!.server.once('error', reject);
        api!.server.listen(port, host, () => resolve());
      }).catch(async (e: unknown) => {
        await pipeline.stop(Date.now(), false);
        await service?.close();
        throw e;
      });
    }
    agent = new Agent(cfg, pipeline, log, service, api, counters, taps);
    const running = agent;
    agent.activity = new ActivitySummary(() => running.components(), log);
    agent.activity.start();
    log.info(
      {
        sources: cfg.agent.sources.length,
        transforms: cfg.agent.transforms.length,
        sinks: cfg.agent.sinks.length,
        api: agent.apiUrl,
      },
      'agent running',
    );
    return agent;
  }

  get apiUrl(): string | undefined {
    const addr = this.api?.server.address();
    return addr && typeof addr === 'object'
      ? `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`
      : undefined;
  }

  health(): AgentHealth {
    const sources = this.pipeline.sources.map((s) => {
      const st = s.status?.();
      return {
        name: s.name,
        ...(st?.files !== undefined ? { files: st.files } : {}),
        ...(st?.warnings.length ? { warnings: st.warnings } : {}),
        ...(st?.degraded ? { degraded: true } : {}),
      };
    });
    const sinks = this.pipeline.deliveries.map((r) => {
      const h = r.health;
      return {
        name: r.o.name,
        state: h.state,
        queuedBatches: r.queue.depthRecords,
        ...(h.lastError ? { lastError: h.lastError } : {}),
        ...(h.queueError !== undefined ? { queueError: h.queueError } : {}),
        ...(h.since !== undefined && h.state !== 'ok'
          ? { since: new Date(h.since).toISOString(), failedAttempts: h.failures }
          : {}),
      };
    });
    const service = this.service && serviceHealth(this.service);
    const status = this.stopping
      ? 'stopping'
      : sinks.some((s) => s.state === 'refused' || s.state === 'failed')
        ? 'failing'
        : // A pattern of several matching nothing is said in `warnings`; a source reading no file at all is
          // degraded, and so is the service when it works only in part (src/service/health.ts).
          sinks.some((s) => s.state === 'retrying' || s.queueError !== undefined) ||
            sources.some((s) => s.files === 0 || s.degraded) ||
            this.reloadFailure !== undefined ||
            service?.degraded
          ? 'degraded'
          : 'ok';
    return {
      status,
      ...(this.reloadFailure ? { reload: this.reloadFailure } : {}),
      sources,
      sinks,
      ...(service ? { monitors: service.monitors } : {}),
      ...(service?.records ? { records: service.records } : {}),
      ...(service?.database ? { database: service.database } : {}),
    };
  }

  /**
   * What kept events from being delivered in this run, one line per sink: events refused and
   * dead-lettered, a refusal that holds the queue, a sink that stopped.
   */
  undelivered(): string[] {
    const out: string[] = [];
    for (const r of this.pipeline.deliveries) {
      const h = r.health;
      const n = r.chain.counters.deadLettered;
      if (n > 0)
        out.push(
          `sink ${r.o.name}: ${n} event(s) refused: ${h.firstRefusal ?? 'see the file'}; kept in ${r.chain.deadLetterPath ?? 'the dead-letter file'}`,
        );
      if (h.state === 'refused' || h.state === 'failed') out.push(`sink ${r.o.name}: ${h.lastError}`);
    }
    return out;
  }

  /** Resolves when the sources have read all they will (stdin at EOF). */
  finished(): Promise<void> {
    return this.pipeline.finished();
  }

  /** How the last reload ended: its failure stays in /health (degraded) until a reload succeeds. */
  reloadOutcome(failure: string | undefined): void {
    this.reloadFailure = failure === undefined ? undefined : { error: failure, at: new Date().toISOString() };
  }

  /**
   * Replaces the pipeline with the one of `next`, and the service's SMTP server (mail held in the outbox
   * is then sent). The rest of the service section needs a restart to change.
   */
  async reload(next: DaemonConfig): Promise<void> {
    const withoutSmtp = (s: DaemonConfig['service']) => ({ ...s, notifiers: { ...s.notifiers, smtp: undefined } });
    if (
      JSON.stringify(withoutSmtp(next.service)) !== JSON.stringify(withoutSmtp(this.cfg.service)) ||
      JSON.stringify(next.agent.api) !== JSON.stringify(this.cfg.agent.api)
    ) {
      this.log.warn(
        'service and agent.api settings change only with a restart (service.notifiers.smtp excepted); reloading the pipeline only',
      );
    }
    if (this.service && JSON.stringify(next.service.notifiers.smtp) !== JSON.stringify(this.cfg.service.notifiers.smtp))
      await reloadSmtp(this.service, next.service.notifiers.smtp, this.log).catch((err: unknown) =>
        this.log.error({ err }, 'SIGHUP: the SMTP server could not be set; reloading the pipeline still'),
      );
    await this.pipeline.stop(Date.now() + next.agent.shutdownTimeoutMs, false);
    // Taps named components of the old config: they end, and their readers tap the new one.
    this.api?.endTaps();
    try {
      this.pipeline = await Pipeline.start(next.agent, {
        log: this.log,
        store: this.service?.store,
        counters: this.counters,
        taps: this.taps,
      });
    } catch (e) {
      this.log.error({ err: e }, 'the new config failed to start; going on with the old one');
      this.pipeline = await Pipeline.start(this.cfg.agent, {
        log: this.log,
        store: this.service?.store,
        counters: this.counters,
        taps: this.taps,
      });
      throw e;
    }
    this.cfg = {
      ...next,
      service: { ...this.cfg.service, notifiers: { ...this.cfg.service.notifiers, smtp: next.service.notifiers.smtp } },
    };
    this.log.info({ sources: next.agent.sources.length, sinks: next.agent.sinks.length }, 'config reloaded');
  }

  /**
   * Shutdown: stop reading, queue what was read, deliver until the deadline, then close everything.
   * Resolves true when everything read was delivered.
   */
  async stop(giveUpOnRefusal = false): Promise<boolean> {
    this.stopping = true;
    const refused = () => this.pipeline.deliveries.some((r) => r.health.state === 'refused');
    // Deliveries get the shutdown's time but a moment to close the store in: the process ends at the
    // time whatever is still running (cli/exit.ts).
    const timeout = this.cfg.agent.shutdownTimeoutMs;
    const delivered = await this.pipeline.stop(
      Date.now() + timeout - Math.min(2000, timeout / 4),
      true,
      giveUpOnRefusal ? refused : undefined,
    );
    this.activity.stopped(delivered);
    await this.api?.close();
    await this.service?.close();
    return delivered;
  }
}
