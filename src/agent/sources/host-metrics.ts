/**
 * The `host_metrics` source: the host's own metrics every `interval`, read from /proc and statfs (no native
 * addon), named as OpenTelemetry's hostmetrics receiver names them (system.cpu.time, system.memory.usage,
 * system.filesystem.usage…), each point an event of metric-points.ts's form for a metrics dataset: a local
 * sink stores them as series and points, an axiom sink ships them as OTLP metrics to {url}/v1/metrics.
 * A collector that cannot read its files says why in the log (once), in /health and in the source's status.
 */
import { readFile, statfs } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { duration, str, strings, type OptionSpecs } from '../../config/options.js';
import { pointEvent, type MetricPoint, type TagValue } from '../../ingest/metric-points.js';
import type { IngestParams } from '../../ingest/request.js';
import { datasetNameProblem } from '../../service/store/dataset-name.js';
import {
  CPU_STATES,
  memoryStates,
  parseDiskstats,
  parseLoadavg,
  parseMeminfo,
  parseMounts,
  parseNetDev,
  parseStat,
} from './host-metrics-proc.js';
import {
  newSourceCounters,
  type Source,
  type SourceCounters,
  type SourceLine,
  type SourceSpec,
  type SourceStatus,
  type Stream,
} from './source.js';

export const COLLECTORS = ['cpu', 'memory', 'load', 'disk', 'filesystem', 'network'] as const;

/** How long one statfs may take: a dead network or FUSE mount would hold it forever. */
const STATFS_TIMEOUT_MS = 5000;

class StatfsTimeout extends Error {}

function withinTime<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new StatfsTimeout()), ms))),
  ]).finally(() => clearTimeout(timer));
}
export type Collector = (typeof COLLECTORS)[number];

export interface HostMetricsSettings {
  intervalMs: number;
  collectors: Collector[];
  dataset: string;
  /** Where /proc is (the host's, mounted into a container: /host/proc). */
  procPath: string;
  /** Where the host's root is, for statfs of its mount points (/hostfs in a container). */
  rootPath: string;
  hostName: string;
}

/**
 * The events' parameters: a metrics dataset (a local sink makes a missing one of that kind), the operator's
 * setting (a receiver refusing it holds the queue until the operator fixes it).
 */
const PARAMS: IngestParams = { datasetKind: 'otel:metrics:v1', configured: true };

type Point = Omit<MetricPoint, 'time' | 'tags'> & { tags: Record<string, TagValue> };
/** A kind of point: `kind(metric, unit, tags, value)`. */
const pointOf =
  (type: string, temporality: string | null) =>
  (metric: string, unit: string, tags: Record<string, TagValue>, value: number): Point => ({
    metric,
    type,
    temporality,
    unit,
    tags,
    value,
  });
const counter = pointOf('CounterMonotonic', 'Cumulative');
const gauge = pointOf('Gauge', null);
const upDown = pointOf('CounterNonMonotonic', 'Cumulative');

export class HostMetricsSource implements Source {
  private stopping = false;
  private running?: Promise<void>;
  private wake?: () => void;
  private offset = 0;
  private readonly stream: Stream;
  /** CPU seconds by state at the last collection, for utilization. */
  private lastCpu?: Map<string, number[]>;
  /** What keeps each failing collector from reading, by collector. */
  private readonly problems = new Map<Collector, string>();

  constructor(
    readonly name: string,
    private readonly s: HostMetricsSettings,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
    readonly counters: SourceCounters = newSourceCounters(),
  ) {
    // Nothing to resume: a point not yet queued at a stop is measured again at the next start.
    this.stream = { id: `${name}:host`, source: name, whole: true, acknowledge: () => undefined };
  }

  async start(emit: (line: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.log.info(
      {
        source: this.name,
        collectors: this.s.collectors,
        interval: `${this.s.intervalMs / 1000}s`,
        dataset: this.s.dataset,
      },
      'source started: collecting host metrics',
    );
    this.running = this.loop(emit);
  }

  private async loop(emit: (line: SourceLine) => Promise<void> | undefined): Promise<void> {
    while (!this.stopping) {
      const started = Date.now();
      const points = await this.collect(Math.floor(started / 1000));
      for (const p of points) {
        if (this.stopping) return;
        const text = pointEvent(p);
        this.counters.linesIn++;
        this.counters.bytesIn += text.length + 1;
        await emit({
          text,
          truncated: false,
          structured: true,
          dataset: this.s.dataset,
          params: PARAMS,
          stream: this.stream,
          offset: ++this.offset,
          generation: 0,
        });
      }
      if (this.stopping) return;
      // The next collection at the next multiple of the interval: points of every host line up.
      const wait = this.s.intervalMs - (Date.now() % this.s.intervalMs);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** One collection: every collector's points at `time`. */
  async collect(time: number): Promise<MetricPoint[]> {
    const out: MetricPoint[] = [];
    const host = { 'host.name': this.s.hostName };
    for (const c of this.s.collectors) {
      try {
        for (const p of await this.collector(c)) out.push({ ...p, time, tags: { ...host, ...p.tags } });
        if (this.problems.delete(c))
          this.log.info({ source: this.name, collector: c }, 'host metrics collector reads again');
      } catch (e) {
        const why = `collector ${c}: ${(e as Error).message}`;
        if (this.problems.get(c) !== why)
          this.log.warn({ source: this.name, collector: c, err: why }, 'host metrics collector cannot read');
        this.problems.set(c, why);
      }
    }
    return out;
  }

  private proc(file: string): Promise<string> {
    return readFile(join(this.s.procPath, file), 'utf8');
  }

  /**
   * A file of a namespace: /proc/mounts and /proc/net/dev are the reader's own namespace's, so with the
   * host's /proc mounted into a container (proc_path not /proc) they are read as the host's init sees them.
   */
  private namespaced(file: string): Promise<string> {
    return this.proc(this.s.procPath === '/proc' ? file : join('1', file));
  }

  private async collector(c: Collector): Promise<Point[]> {
    switch (c) {
      case 'cpu':
        return this.cpu();
      case 'memory': {
        const states = memoryStates(parseMeminfo(await this.proc('meminfo')));
        if (!states) throw new Error(`${join(this.s.procPath, 'meminfo')} has no MemTotal`);
        const total = Object.values(states).reduce((a, b) => a + b, 0) - states.slab_unreclaimable!;
        return Object.entries(states).flatMap(([state, bytes]) => [
          upDown('system.memory.usage', 'By', { state }, bytes),
          gauge('system.memory.utilization', '1', { state }, total > 0 ? bytes / total : 0),
        ]);
      }
      case 'load': {
        const load = parseLoadavg(await this.proc('loadavg'));
        if (!load) throw new Error(`${join(this.s.procPath, 'loadavg')} is not three numbers`);
        return (['1m', '5m', '15m'] as const).map((span, i) =>
          gauge(`system.cpu.load_average.${span}`, '{thread}', {}, load[i]!),
        );
      }
      case 'disk':
        return [...parseDiskstats(await this.proc('diskstats'))].flatMap(([device, d]) => [
          counter('system.disk.io', 'By', { device, direction: 'read' }, d.readBytes),
          counter('system.disk.io', 'By', { device, direction: 'write' }, d.writeBytes),
          counter('system.disk.operations', '{operation}', { device, direction: 'read' }, d.readOps),
          counter('system.disk.operations', '{operation}', { device, direction: 'write' }, d.writeOps),
          counter('system.disk.io_time', 's', { device }, d.ioTime),
        ]);
      case 'network':
        return [...parseNetDev(await this.namespaced('net/dev'))].flatMap(([device, n]) => [
          counter('system.network.io', 'By', { device, direction: 'receive' }, n.rxBytes),
          counter('system.network.io', 'By', { device, direction: 'transmit' }, n.txBytes),
          counter('system.network.packets', '{packet}', { device, direction: 'receive' }, n.rxPackets),
          counter('system.network.packets', '{packet}', { device, direction: 'transmit' }, n.txPackets),
          counter('system.network.errors', '{error}', { device, direction: 'receive' }, n.rxErrors),
          counter('system.network.errors', '{error}', { device, direction: 'transmit' }, n.txErrors),
          counter('system.network.dropped', '{packet}', { device, direction: 'receive' }, n.rxDropped),
          counter('system.network.dropped', '{packet}', { device, direction: 'transmit' }, n.txDropped),
        ]);
      case 'filesystem':
        return this.filesystems();
    }
  }

  private async cpu(): Promise<Point[]> {
    const now = parseStat(await this.proc('stat'));
    if (now.size === 0) throw new Error(`${join(this.s.procPath, 'stat')} lists no CPU`);
    const out: Point[] = [];
    for (const [cpu, seconds] of now)
      CPU_STATES.forEach((state, i) => out.push(counter('system.cpu.time', 's', { cpu, state }, seconds[i]!)));
    // Utilization: each state's share of all CPUs' time since the last collection.
    const last = this.lastCpu;
    this.lastCpu = now;
    if (last) {
      const spent = CPU_STATES.map((_, i) => {
        let s = 0;
        for (const [cpu, seconds] of now) s += Math.max(0, seconds[i]! - (last.get(cpu)?.[i] ?? seconds[i]!));
        return s;
      });
      const all = spent.reduce((a, b) => a + b, 0);
      if (all > 0)
        CPU_STATES.forEach((state, i) => out.push(gauge('system.cpu.utilization', '1', { state }, spent[i]! / all)));
    }
    return out;
  }

  private async filesystems(): Promise<Point[]> {
    const out: Point[] = [];
    const stuck: string[] = [];
    for (const m of parseMounts(await this.namespaced('mounts'))) {
      let st;
      try {
        st = await withinTime(statfs(join(this.s.rootPath, m.mountpoint)), STATFS_TIMEOUT_MS);
      } catch (e) {
        if (e instanceof StatfsTimeout) stuck.push(m.mountpoint);
        continue; // a mount point this process cannot see (another namespace, no permission)
      }
      const tags = { device: m.device, mountpoint: m.mountpoint, type: m.type };
      const used = (st.blocks - st.bfree) * st.bsize;
      const free = st.bavail * st.bsize;
      const reserved = (st.bfree - st.bavail) * st.bsize;
      if (st.blocks === 0) continue;
      out.push(
        upDown('system.filesystem.usage', 'By', { ...tags, state: 'used' }, used),
        upDown('system.filesystem.usage', 'By', { ...tags, state: 'free' }, free),
        upDown('system.filesystem.usage', 'By', { ...tags, state: 'reserved' }, reserved),
        gauge('system.filesystem.utilization', '1', tags, used + free > 0 ? used / (used + free) : 0),
      );
    }
    if (stuck.length) {
      const why = `statfs of ${stuck.join(', ')} gave no answer within ${STATFS_TIMEOUT_MS / 1000}s (a file system that hangs)`;
      if (this.problems.get('filesystem') !== why)
        this.log.warn({ source: this.name, collector: 'filesystem', err: why }, 'host metrics collector cannot read');
      this.problems.set('filesystem', why);
    }
    return out;
  }

  finished(): Promise<void> {
    return new Promise(() => undefined); // collects until the agent stops
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    // A collection stuck in the kernel (statfs of a dead mount) is not waited for past its timeout.
    await withinTime(this.running ?? Promise.resolve(), STATFS_TIMEOUT_MS).catch(() => undefined);
  }

  async close(): Promise<void> {}

  status(): SourceStatus {
    const warnings = [...this.problems.values()];
    return { warnings, degraded: warnings.length > 0 };
  }
}

const HOST_METRICS_OPTIONS = {
  interval: duration('10s').doc('how often the host is measured (points line up on multiples of it)'),
  collectors: strings([...COLLECTORS]).doc(
    `what to measure, any of ${COLLECTORS.join(', ')}: system.cpu.time and .utilization, system.memory.usage and .utilization, system.cpu.load_average.1m/5m/15m, system.disk.io/.operations/.io_time, system.filesystem.usage and .utilization, system.network.io/.packets/.errors/.dropped`,
  ),
  dataset: str('host-metrics').doc(
    'the metrics dataset the points go to (a local sink makes it, of kind otel:metrics:v1)',
  ),
  proc_path: str('/proc').doc("where /proc is: the host's mounted into a container (`/host/proc`)"),
  root_path: str('/').doc("where the host's root is, for the file systems' space (`/hostfs` in a container)"),
  host_name: str().doc('the `host.name` tag of every point').shown("the machine's host name"),
} satisfies OptionSpecs;

export const hostMetricsSource: SourceSpec<HostMetricsSettings, typeof HOST_METRICS_OPTIONS> = {
  type: 'host_metrics',
  summary: "the host's CPU, memory, load, disks, file systems and network from /proc and statfs, as OTel metrics",
  options: HOST_METRICS_OPTIONS,
  configure(v, o) {
    if (v.interval < 1000) o.fail('interval', 'at least 1s');
    const unknown = v.collectors.find((c) => !(COLLECTORS as readonly string[]).includes(c));
    if (unknown !== undefined) o.fail('collectors', `"${unknown}" is not a collector (${COLLECTORS.join(', ')})`);
    if (v.collectors.length === 0) o.fail('collectors', `name one or more of ${COLLECTORS.join(', ')}`);
    const problem = datasetNameProblem(v.dataset);
    if (problem) o.fail('dataset', problem);
    return {
      intervalMs: v.interval,
      collectors: [...new Set(v.collectors)] as Collector[],
      dataset: v.dataset,
      procPath: v.proc_path,
      rootPath: v.root_path,
      hostName: v.host_name || hostname(),
    };
  },
  metricsDataset: (s) => s.dataset,
  create: (s, ctx) =>
    new HostMetricsSource(
      ctx.name,
      s,
      { info: (o, m) => ctx.log.info(o, m), warn: (o, m) => ctx.log.warn(o, m) },
      ctx.counters(newSourceCounters),
    ),
};
