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
import type { AgentConfig, SinkConfig } from '../config.js';
import type { EventStore } from '../../service/store/event-store.js';
import { CounterBook } from '../counters.js';
import { AckGate } from './acks.js';
import type { TapHub } from './taps.js';
import { outputName } from './topology.js';
import { Delivery, newDeliveryCounters } from '../delivery/delivery.js';
import { newSinkCounters } from '../delivery/send-chain.js';
import type { HealthReporter } from '../delivery/sink-health.js';
import type { Sink } from '../sinks/sink.js';
import type { Source } from '../sources/source.js';
import { emitInOrder, type Emit, type Envelope, type Transform } from '../transforms/transform.js';

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
  /** Where `ferry tap` listens to what leaves sources and transforms (the agent's, across reloads). */
  taps?: TapHub;
  /** 401, 403 and 404 from a receiver: hold the queue (the daemon) or dead-letter (`ferry pipe`). */
  refusal?: 'hold' | 'dead-letter';
}

export class Pipeline {
  private constructor(
    readonly sources: Source[],
    /** In the order of the flow: a transform comes after every transform it reads from. */
    readonly transforms: Transform[],
    /** The delivery to each sink, in config order. */
    readonly deliveries: Delivery[],
    private readonly log: Logger,
  ) {}

  static async start(cfg: AgentConfig, deps: PipelineDeps): Promise<Pipeline> {
    const { log } = deps;
    const book = deps.counters ?? new CounterBook();
    // What takes each transform's and sink's input; a component's readers are all made before it is.
    const takes = new Map<string, Emit>();
    // What leaves a component is offered to the taps listening to it (one lookup when none does).
    const emitterOf = (name: string): Emit => {
      const emit = forkingEmitter(name);
      const taps = deps.taps;
      if (!taps) return emit;
      return (e) => {
        if (taps.listening(name)) taps.offer(name, e);
        return emit(e);
      };
    };
    // At a fork each reader gets its own copy, marked with its route: copies are acknowledged apart.
    const forkingEmitter = (name: string): Emit => {
      const list = cfg.topology.readersOf(name).map((r) => takes.get(r)!);
      if (list.length === 1) return list[0]!;
      return (e: Envelope) => {
        const routes = cfg.topology.forkRoutes(name, e.route ?? 0);
        // Every copy made before the envelope itself goes, last: a reader may change what it is handed.
        const copies = list.map((_, i) => (i === list.length - 1 ? e : { ...e, event: e.event?.clone() }));
        copies.forEach((c, i) => (c.route = routes[i]));
        return emitInOrder(list, copies);
      };
    };

    // A named output is a path of its own: what goes out of it is marked with its route.
    const outputEmitter = (name: string, outputs: readonly string[], out: string): Emit => {
      const i = outputs.indexOf(out);
      if (i < 0) throw new Error(`transforms.${name} has no output "${out}"`);
      const target = emitterOf(outputName(name, out));
      if (outputs.length === 1) return target;
      // The routes out of it for the route an envelope came with: the same for every line of a path.
      let from = -1;
      let routes: readonly number[] = [];
      return (e) => {
        const route = e.route ?? 0;
        if (route !== from) routes = cfg.topology.forkRoutes(name, (from = route));
        e.route = routes[i];
        return target(e);
      };
    };

    // A checkpoint waits for every copy of a source's lines.
    const acks = new AckGate((source) => cfg.topology.copiesOf(source));

    const deliveries: Delivery[] = [];
    const report: HealthReporter = deps.reportSink ?? ((level, msg, context) => deps.log[level](context, msg));
    try {
      for (const s of cfg.sinks) {
        const deadLetterPath = s.deadLetter ?? join(cfg.dataDir, 'dead-letter', `${s.name}.ndjson`);
        const delivery = await Delivery.open(
          {
            name: s.name,
            settings: s,
            queueDir: join(cfg.dataDir, 'queues', s.name),
            deadLetterPath,
            refusal: deps.refusal,
            report,
            onDurable: (m, queued) => acks.durable(m, queued),
            onError: (err) => deps.onSinkError?.(s.name, err),
            counters: {
              delivery: book.get(`delivery:${s.name}`, newDeliveryCounters),
              sink: book.get(`sink:${s.name}`, newSinkCounters),
            },
          },
          await createSink(s, deps, deadLetterPath),
        );
        deliveries.push(delivery);
        takes.set(s.name, (e) => delivery.accept(e));
      }
    } catch (e) {
      await Promise.all(deliveries.map((d) => d.stop()));
      throw e;
    }

    // Against the flow, so that whatever a transform emits to exists when it is made.
    const byName = new Map(cfg.transforms.map((t) => [t.name, t]));
    const built = new Map<string, Transform>();
    for (const name of [...cfg.topology.transformOrder].reverse()) {
      const t = byName.get(name)!;
      const transform = t.spec.create(t.settings, {
        name,
        next: emitterOf(name),
        output: (out) => outputEmitter(name, t.outputs ?? [], out),
        isRead: (out) => cfg.topology.readersOf(outputName(name, out)).length > 0,
        counters: (make) => book.get(`transform:${name}`, make),
        log,
      });
      built.set(name, transform);
      takes.set(name, (e) => transform.process(e));
    }
    const ordered = cfg.topology.transformOrder.map((name) => built.get(name)!);

    const sinkOf = new Map(cfg.sinks.map((s, i) => [s.name, deliveries[i]!]));
    const flushSinks = async (source: string) => {
      await Promise.all(cfg.topology.sinksOf(source).map((sink) => sinkOf.get(sink)!.queueNow()));
    };
    const sources: Source[] = cfg.sources.map((s) =>
      s.spec.create(s.settings, {
        name: s.name,
        dataDir: cfg.dataDir,
        log,
        // Feeding only sinks, lines are shipped as they are: they need not be decoded at all.
        decoded: cfg.topology.isReadByTransform(s.name),
        counters: (make) => book.get(`source:${s.name}`, make),
        flush: () => flushSinks(s.name),
      }),
    );
    const pipeline = new Pipeline(sources, ordered, deliveries, log);
    for (const [i, s] of sources.entries()) await s.start(emitterOf(cfg.sources[i]!.name));
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
      const expired = new Promise<'late'>(
        (r) => (timer = setTimeout(() => r('late'), Math.min(Math.max(0, left), 2 ** 31 - 1))),
      );
      const outcome = await Promise.race([work.then(() => 'done' as const), expired]);
      clearTimeout(timer);
      if (outcome === 'late')
        this.log.warn({ what }, 'shutdown deadline passed; what was not queued is read again after the next start');
      return outcome === 'done';
    };
    await within('stopping sources', Promise.all(this.sources.map((s) => s.stop())));
    let queued = true;
    for (const t of this.transforms) queued &&= await within(`flushing ${t.name}`, t.flush());
    if (queued) await within('queueing batches', Promise.all(this.deliveries.map((d) => d.flush())));
    await Promise.all(this.sources.map((s) => s.close()));
    let delivered = queued;
    if (drain) {
      const drained = await Promise.all(this.deliveries.map((d) => d.drain(deadline, giveUp)));
      this.deliveries.forEach((d, i) => {
        if (!drained[i])
          this.log.warn(
            { sink: d.o.name, batches: d.queue.depthRecords },
            'undelivered batches stay queued for the next start',
          );
      });
      delivered &&= drained.every(Boolean);
    }
    await Promise.all(this.deliveries.map((d) => d.stop()));
    return delivered;
  }
}

/** The sink of a config entry, built by its type's spec; where it delivers is logged (never its token). */
async function createSink(s: SinkConfig, deps: PipelineDeps, deadLetterPath: string): Promise<Sink> {
  deps.log.info(
    { sink: s.name, type: s.type, ...s.spec.describe?.(s.settings), dataset: s.dataset, deadLetter: deadLetterPath },
    'sink started',
  );
  return s.spec.create(s.settings, {
    name: s.name,
    dataset: s.dataset,
    timestampField: s.timestampField,
    timestampFormat: s.timestampFormat,
    labels: s.labels,
    store: deps.store,
    log: deps.log,
  });
}
