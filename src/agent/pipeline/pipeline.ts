/**
 * The agent's topology, built from the config: sources → transforms → sinks, wired by each component's
 * `inputs`. A component feeding several others hands each its own copy of the event.
 *
 * Stopping keeps the at-least-once promise: sources stop reading, transforms let go of what they hold,
 * batches go into the queues (acknowledging their lines), and only then are the checkpoints written.
 * Whatever did not make it into a queue before the deadline is read again after the next start.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AgentConfig, SinkConfig } from '../../config/agent.js';
import type { EventStore } from '../../service/store/event-store.js';
import { CounterBook } from '../counters.js';
import { AckGate } from './acks.js';
import { newRunnerCounters, SinkRunner } from './sink-runner.js';
import { AxiomSink } from '../sinks/axiom.js';
import { DeadLetterFile } from '../sinks/dead-letter.js';
import { LocalSink } from '../sinks/local.js';
import { newSinkCounters, type Sink } from '../sinks/sink.js';
import { SinkHealth, type HealthReporter } from '../sinks/sink-health.js';
import { FileSource, newFileSourceCounters } from '../sources/file/file-source.js';
import { newSourceCounters, type Source } from '../sources/source.js';
import { StdinSource } from '../sources/stdin.js';
import { EnrichTransform } from '../transforms/enrich.js';
import { MultilineTransform } from '../transforms/multiline.js';
import { ParseTransform } from '../transforms/parse.js';
import type { Emit, Envelope, Transform } from '../transforms/transform.js';

export interface PipelineDeps {
  log: Logger;
  /** The embedded service's store, for local sinks (absent in remote-only mode). */
  store?: EventStore;
  /** A sink gave up delivering (closed, or its attempt limit); it is logged in any case. */
  onSinkError?: (sink: string, err: unknown) => void;
  /** Counters that outlive this pipeline (the agent's, across reloads). */
  counters?: CounterBook;
  /** Where sinks say how delivery goes; by default the log. */
  reportSink?: HealthReporter;
  /** 401, 403 and 404 from a receiver: hold the queue (the daemon) or dead-letter (`ferry pipe`). */
  refusal?: 'hold' | 'dead-letter';
}

export class Pipeline {
  private constructor(
    readonly sources: Source[],
    /** In the order of the flow: a transform comes after every transform it reads from. */
    readonly transforms: Transform[],
    readonly sinks: SinkRunner[],
    private readonly log: Logger,
  ) {}

  static async start(cfg: AgentConfig, deps: PipelineDeps): Promise<Pipeline> {
    const { log } = deps;
    const book = deps.counters ?? new CounterBook();
    const consumers = new Map<string, Emit[]>();
    const feed = (inputs: string[], emit: Emit) => {
      for (const i of inputs) consumers.set(i, [...(consumers.get(i) ?? []), emit]);
    };
    const emitterOf = (name: string): Emit => {
      const list = consumers.get(name) ?? [];
      if (list.length === 1) return list[0]!;
      return async (e: Envelope) => {
        for (let i = 0; i < list.length; i++) {
          const last = i === list.length - 1;
          await list[i]!(last ? e : { ...e, event: e.event ? { ...e.event } : undefined, extra: e.extra?.slice() });
        }
      };
    };

    // Which sinks each source reaches, so a checkpoint waits for all of them.
    const reach = new Map<string, number[]>();
    const upstreamOf = new Map<string, string[]>([...cfg.transforms, ...cfg.sinks].map((c) => [c.name, c.inputs]));
    cfg.sinks.forEach((s, idx) => {
      const seen = new Set<string>();
      const walk = (name: string) => {
        if (seen.has(name)) return;
        seen.add(name);
        const ups = upstreamOf.get(name);
        if (ups) ups.forEach(walk);
        else reach.set(name, [...(reach.get(name) ?? []), idx]);
      };
      s.inputs.forEach(walk);
    });
    const acks = new AckGate((source) => reach.get(source) ?? []);

    const sinks: SinkRunner[] = [];
    try {
      for (const [idx, s] of cfg.sinks.entries()) {
        const runner = await SinkRunner.open({
          name: s.name, batch: s.batch, queue: s.queue, concurrency: s.concurrency, queueDir: join(cfg.dataDir, 'queues', s.name),
          onDurable: (m) => acks.durable(idx, m),
          onError: (err) => deps.onSinkError?.(s.name, err),
          counters: book.get(`runner:${s.name}`, newRunnerCounters),
        }, await createSink(s, cfg, deps, book));
        sinks.push(runner);
        feed(s.inputs, (e) => runner.accept(e));
      }
    } catch (e) {
      await Promise.all(sinks.map((r) => r.stop()));
      throw e;
    }

    // Transforms are built from the sinks' side, so each one's downstream exists when it is made.
    const built = new Map<string, Transform>();
    const build = (name: string): void => {
      if (built.has(name)) return;
      const t = cfg.transforms.find((x) => x.name === name)!;
      for (const c of [...cfg.transforms].filter((x) => x.inputs.includes(name))) build(c.name);
      const next = emitterOf(name);
      const transform = t.type === 'parse' ? new ParseTransform(name, t.parser, next)
        : t.type === 'multiline' ? new MultilineTransform(name, t.multiline, next)
          : new EnrichTransform(name, t, next);
      built.set(name, transform);
      feed(t.inputs, (e) => transform.process(e));
    };
    for (const t of cfg.transforms) build(t.name);
    // Flow order for flushing: a transform after all of its inputs.
    const ordered: Transform[] = [];
    const placed = new Set<string>();
    const place = (name: string) => {
      const t = cfg.transforms.find((x) => x.name === name);
      if (!t || placed.has(name)) return;
      t.inputs.forEach(place);
      placed.add(name);
      ordered.push(built.get(name)!);
    };
    cfg.transforms.forEach((t) => place(t.name));

    const sources: Source[] = cfg.sources.map((s) => s.type === 'stdin'
      ? new StdinSource(s.name, s.maxLineBytes, undefined, book.get(`source:${s.name}`, newSourceCounters))
      : new FileSource(s.name, {
        ...s, chunkBytes: 256 * 1024, stateDir: cfg.dataDir,
        // Feeding only sinks, lines are shipped as they are: they need not be decoded at all.
        decode: cfg.transforms.some((t) => t.inputs.includes(s.name)),
        onError: (err, context) => log.warn({ err, ...context }, 'file source problem'),
        onInfo: (msg, context) => log.info(context, msg),
        onWarning: (msg, context) => log.warn(context, msg),
      }, book.get(`source:${s.name}`, newFileSourceCounters)));
    const pipeline = new Pipeline(sources, ordered, sinks, log);
    for (const [i, s] of sources.entries()) {
      await s.start(emitterOf(cfg.sources[i]!.name));
      if (s instanceof StdinSource) log.info({ source: s.name }, 'source started: reading standard input');
    }
    return pipeline;
  }

  /** Resolves when every source has read all it will (stdin at EOF); never, with file sources. */
  async finished(): Promise<void> {
    await Promise.all(this.sources.map((s) => s.finished()));
  }

  /**
   * Stops the flow by `deadline` (epoch ms). With `drain`, waits until then for the queues to empty before
   * the sinks stop (shutdown); without, the queues keep what they hold for the next pipeline (reload).
   * Resolves true when everything read was queued (and, with `drain`, delivered).
   */
  async stop(deadline: number, drain: boolean, giveUp?: () => boolean): Promise<boolean> {
    const within = async (what: string, work: Promise<unknown>) => {
      const left = deadline - Date.now();
      let timer: NodeJS.Timeout | undefined;
      // setTimeout takes at most 2^31-1 ms; a later deadline (no deadline) never fires.
      const expired = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), Math.min(Math.max(0, left), 2 ** 31 - 1))));
      const outcome = await Promise.race([work.then(() => 'done' as const), expired]);
      clearTimeout(timer);
      if (outcome === 'late') this.log.warn({ what }, 'shutdown deadline passed; what was not queued is read again after the next start');
      return outcome === 'done';
    };
    await within('stopping sources', Promise.all(this.sources.map((s) => s.stop())));
    let queued = true;
    for (const t of this.transforms) queued &&= await within(`flushing ${t.name}`, t.flush());
    if (queued) await within('queueing batches', Promise.all(this.sinks.map((s) => s.flush())));
    await Promise.all(this.sources.map((s) => s.close()));
    let delivered = queued;
    if (drain) {
      const drained = await Promise.all(this.sinks.map((s) => s.drain(deadline, giveUp)));
      this.sinks.forEach((s, i) => {
        if (!drained[i]) this.log.warn({ sink: s.o.name, batches: s.queue.depthRecords }, 'undelivered batches stay queued for the next start');
      });
      delivered &&= drained.every(Boolean);
    }
    await Promise.all(this.sinks.map((s) => s.stop()));
    return delivered;
  }
}

/** What a sink does, for the start-up log: where it delivers (never its token). */
function describeSink(s: SinkConfig): Record<string, unknown> {
  return s.type === 'local' ? { sink: s.name, type: s.type, dataset: s.dataset } : { sink: s.name, type: s.type, url: s.url, dataset: s.dataset };
}

async function createSink(s: SinkConfig, cfg: AgentConfig, deps: PipelineDeps, book: CounterBook): Promise<Sink> {
  const deadLetter = new DeadLetterFile(s.deadLetter ?? join(cfg.dataDir, 'dead-letter', `${s.name}.ndjson`));
  const report: HealthReporter = deps.reportSink ?? ((level, msg, context) => deps.log[level](context, msg));
  const shared = { counters: book.get(`sink:${s.name}`, newSinkCounters), health: new SinkHealth(s.name, report) };
  deps.log.info({ ...describeSink(s), deadLetter: deadLetter.path }, 'sink started');
  if (s.type === 'local') {
    const store = deps.store!;
    // As with `ferry pipe --local`: the host's own store has nobody to create datasets for it.
    if (!store.hasDataset(s.dataset)) await store.createDataset({ name: s.dataset, who: `agent sink ${s.name}` });
    return new LocalSink(store, s.dataset, deadLetter, { timestampField: s.timestampField, timestampFormat: s.timestampFormat, labels: s.labels }, s.name, shared);
  }
  return new AxiomSink({
    name: s.name, url: s.url!, dataset: s.dataset, token: s.token!, deadLetter,
    backoff: { initialMs: s.retry.initialMs, maxMs: s.retry.maxMs }, maxAttempts: s.retry.maxAttempts, timeoutMs: s.timeoutMs,
    timestampField: s.timestampField, timestampFormat: s.timestampFormat, labels: s.labels, compression: s.compression,
    refusal: deps.refusal ?? 'hold', ...shared,
  });
}
