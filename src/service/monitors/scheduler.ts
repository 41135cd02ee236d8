/**
 * Runs monitors on their schedule, against the local store, under the identity that created each one.
 *
 * - Ticks: every intervalMinutes, at a second within the minute fixed by what the monitor reads (its
 *   creator, query, range, delay and interval), so that monitors spread over the minute, while those that
 *   read the same thing tick together and share one query per tick (a fleet of alerts on one query with
 *   different thresholds or notifiers costs one query). The run at tick t reads
 *   [t − secondDelay − range, t − secondDelay].
 * - At most one run per tick: the tick is written down before the run starts. A monitor overdue after a
 *   restart or a pause runs once, for its latest tick, not once per missed tick (no alert storm).
 * - MatchEvent windows start where the previous one ended, so each event is considered exactly once.
 * - Runs go through a queue of `concurrency` batches at a time; a monitor already queued or running is not
 *   queued again.
 */
import type { MplQueries } from '../query/mpl-queries.js';
import { mplOutcome } from './mpl-outcome.js';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { canDataset, type Principal } from '../auth/capabilities.js';
import type { QueryEngine, QueryOutcome } from '../query/engine.js';
import type { DocumentTable } from '../store/documents.js';
import { formatRfc3339Nano } from '../../util/time.js';
import type { AlertNotification, ChannelContext } from '../notifiers/channel.js';
import { deliver, type DeliveryOutcome, type DeliveryPolicy } from '../notifiers/delivery.js';
import { isSnoozed, type Notifier } from '../notifiers/notifier.js';
import { type AlertEvent, type GroupState, stepAlerts } from './alert-state.js';
import { evaluateAnomaly, evaluateThreshold, matchedEvents, type Observation } from './evaluate.js';
import type { AlertHistory } from './history.js';
import { isPaused, type Monitor, runsAs } from './monitor.js';
import type { RunLog, RunRecord } from './run-log.js';

/** Per monitor: the last tick claimed, alert groups, the MatchEvent cursor and notification caps. */
export interface MonitorState {
  id: string;
  lastTickMs: number;
  groups: Record<string, GroupState>;
  /** MatchEvent: the end (ns, as a decimal string) of the last window read. */
  matchCursorNs?: string;
  /** MatchEvent notification caps: per minute and per UTC day. */
  caps?: { minute: number; minuteCount: number; day: string; dayCount: number };
  lastRun?: { time: string; state: string; value: number | null; error: string | null };
}

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** MatchEvent caps (management.md §1.3): notifications per monitor per minute and per day. */
export const MATCH_CAPS = { perMinute: 10, perDay: 500 };

export interface SchedulerDeps {
  monitors: DocumentTable<Monitor>;
  states: DocumentTable<MonitorState>;
  notifiers: DocumentTable<Notifier>;
  engine: QueryEngine;
  /** Runs the queries of monitors of metrics (mplQuery). */
  mpl: MplQueries;
  /** The identity a monitor runs under (runsAs), or why it cannot run. */
  principalFor(id: string): Principal | string;
  outbound: ChannelContext;
  delivery: DeliveryPolicy;
  history: AlertHistory;
  runs: RunLog;
  clock: Clock;
  log: Logger;
  concurrency: number;
}

type Scheduled = Pick<
  Monitor,
  | 'id'
  | 'type'
  | 'createdBy'
  | 'runAs'
  | 'aplQuery'
  | 'mplQuery'
  | 'rangeMinutes'
  | 'secondDelay'
  | 'intervalMinutes'
  | 'compareDays'
>;

/**
 * Monitors with the same key read the same rows at the same ticks, so one query serves them all. A
 * MatchEvent monitor reads from its own cursor: its key is its own.
 */
export function shareKey(m: Scheduled): string {
  if (m.type === 'MatchEvent') return m.id;
  return JSON.stringify([
    runsAs(m),
    m.aplQuery,
    m.mplQuery ?? '',
    m.rangeMinutes,
    m.secondDelay,
    m.intervalMinutes,
    m.compareDays,
  ]);
}

const phases = new WeakMap<Scheduled, number>();

/** The second within the minute at which a monitor's ticks fall (a stored monitor is never changed in place). */
export function tickPhaseMs(m: Scheduled): number {
  let phase = phases.get(m);
  if (phase === undefined) {
    phase = createHash('sha256').update(shareKey(m)).digest().readUInt32BE(0) % 60_000;
    phases.set(m, phase);
  }
  return phase;
}

/** The latest tick at or before `nowMs`. */
export function latestTick(m: Scheduled, nowMs: number): number {
  const interval = m.intervalMinutes * 60_000;
  const phase = tickPhaseMs(m);
  return Math.floor((nowMs - phase) / interval) * interval + phase;
}

const NS_PER_MS = 1_000_000n;

export class MonitorScheduler {
  private readonly queued = new Set<string>();
  private readonly queue: { key: string; tickMs: number; ids: string[] }[] = [];
  private running = 0;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly deliveries = new Set<Promise<unknown>>();
  private timer?: NodeJS.Timeout;
  private stopped = false;
  /** Counts since start, for /metrics. */
  readonly counts = {
    runs: 0,
    runErrors: 0,
    notificationsSent: 0,
    notificationsFailed: 0,
    suppressed: 0,
    skippedTicks: 0,
  };
  /** The last notification that could not be delivered, for /health. */
  lastNotificationFailure?: { time: string; monitorId: string; error: string };
  /** The last time runs fell so far behind that ticks were passed over, for /health. */
  lastSkippedTick?: { time: string; monitorId: string; skippedTicks: number; delayMs: number };
  /** The tick each monitor last ran in this process: a later run more than one interval on means ticks were skipped. */
  private readonly claimed = new Map<string, { tickMs: number; intervalMs: number }>();
  private behindSince?: { atMs: number; skipped: number; maxDelayMs: number };

  constructor(private readonly d: SchedulerDeps) {}

  /** Where runs are recorded. */
  get runLog(): RunLog {
    return this.d.runs;
  }

  /** Wakes at the next tick of any monitor, and at least every second (a pause ends, the clock jumps). */
  start(): void {
    const wake = () => {
      if (this.stopped) return;
      const next = this.enqueueDue();
      this.timer = setTimeout(wake, Math.max(5, Math.min(1000, next - this.d.clock.now())));
      this.timer.unref();
    };
    wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.queue.length = 0;
    await this.idle();
    await Promise.allSettled([...this.deliveries]);
    await this.d.runs.flush();
  }

  /** A new or changed monitor starts from the tick it is in: its first run is the next tick. */
  async arm(m: Monitor): Promise<void> {
    const prev = this.d.states.get(m.id);
    await this.d.states.put({ ...(prev ?? { groups: {} }), id: m.id, lastTickMs: latestTick(m, this.d.clock.now()) });
  }

  async forget(id: string): Promise<void> {
    this.claimed.delete(id);
    await this.d.states.delete(id);
    await this.d.history.forget(id);
  }

  /** Queues every monitor whose latest tick has not run yet; answers when the next tick of any falls. */
  enqueueDue(): number {
    const now = this.d.clock.now();
    let next = Infinity;
    if (this.stopped) return next;
    const batches = new Map<string, { key: string; tickMs: number; ids: string[] }>();
    for (const m of this.d.monitors.list()) {
      if (isPaused(m, now)) this.claimed.delete(m.id); // a pause passes over ticks on purpose
      if (this.queued.has(m.id) || isPaused(m, now)) continue;
      const tick = latestTick(m, now);
      next = Math.min(next, tick + m.intervalMinutes * 60_000);
      const last = this.d.states.get(m.id)?.lastTickMs;
      if (last !== undefined && last >= tick) continue;
      this.queued.add(m.id);
      const key = `${tick} ${shareKey(m)}`;
      const batch = batches.get(key);
      if (batch) batch.ids.push(m.id);
      else batches.set(key, { key, tickMs: tick, ids: [m.id] });
    }
    if (!batches.size) return next;
    this.queue.push(...batches.values());
    this.queue.sort((a, b) => a.tickMs - b.tickMs);
    this.pump();
    return next;
  }

  /** Runs what is due now and waits for it (and its notifications): how tests walk a schedule. */
  async runDue(): Promise<void> {
    this.enqueueDue();
    await this.idle();
    await Promise.allSettled([...this.deliveries]);
    await this.d.runs.flush();
  }

  private idle(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private pump(): void {
    while (this.running < this.d.concurrency && this.queue.length) {
      const job = this.queue.shift()!;
      this.running++;
      void this.runBatch(job.ids, job.tickMs)
        .catch((e: unknown) => {
          // Writing the run down failed (the store refused it): said, and the next tick tries again.
          this.counts.runErrors++;
          this.d.log.error({ monitors: job.ids, err: (e as Error).message }, 'monitor run could not be recorded');
        })
        .finally(() => {
          for (const id of job.ids) this.queued.delete(id);
          this.running--;
          this.pump();
          if (this.running === 0 && this.queue.length === 0) for (const w of this.idleWaiters.splice(0)) w();
        });
    }
  }

  /**
   * Monitors that read the same rows at this tick: the query runs once, each monitor judges the result.
   * The tick is claimed for all of them in one write before any runs (a crash mid-run skips this tick
   * rather than running it twice), and their states are written together after.
   */
  private async runBatch(ids: string[], tickMs: number): Promise<void> {
    const claims = new Map<string, (cur: MonitorState | undefined) => MonitorState | undefined>();
    for (const id of ids) {
      // Not for a monitor deleted meanwhile, nor a tick that already ran.
      claims.set(id, (cur) =>
        !this.d.monitors.has(id) || (cur && cur.lastTickMs >= tickMs)
          ? undefined
          : { ...(cur ?? { id, groups: {} }), lastTickMs: tickMs },
      );
    }
    const claimed = await this.d.states.writeMany(claims);
    const results = new Map<string, Promise<QueryOutcome>>();
    const done: { m: Monitor; state: MonitorState; notifications: AlertNotification[]; record: RunRecord }[] = [];
    for (const id of claimed) {
      const run = await this.runOne(id, tickMs, results);
      if (run) done.push(run);
    }
    // A monitor changed during its run keeps the state its change set (groups start over), plus this run.
    await this.d.states.writeMany(
      new Map(
        done.map(({ m, state }) => [
          m.id,
          (cur: MonitorState | undefined) =>
            !cur
              ? undefined
              : this.d.monitors.get(m.id)?.updatedAt === m.updatedAt
                ? state
                : { ...cur, lastTickMs: Math.max(cur.lastTickMs, tickMs), lastRun: state.lastRun },
        ]),
      ),
    );
    for (const { m, notifications, record } of done) this.send(m, notifications, record);
  }

  /**
   * Ticks passed over since this monitor's previous run here: more monitors than the engine can run in an
   * interval. Not after a restart or a pause (overdue monitors run once on purpose). Said at most once a minute.
   */
  private skipped(m: Monitor, tickMs: number, delayMs: number): number {
    const intervalMs = m.intervalMinutes * 60_000;
    const prev = this.claimed.get(m.id);
    this.claimed.set(m.id, { tickMs, intervalMs });
    if (!prev || prev.intervalMs !== intervalMs) return 0;
    const skipped = Math.max(0, Math.round((tickMs - prev.tickMs) / intervalMs) - 1);
    if (!skipped) return 0;
    this.counts.skippedTicks += skipped;
    const now = this.d.clock.now();
    this.lastSkippedTick = { time: new Date(now).toISOString(), monitorId: m.id, skippedTicks: skipped, delayMs };
    const b = this.behindSince;
    if (!b) {
      this.behindSince = { atMs: now, skipped, maxDelayMs: delayMs };
      this.d.log.warn(
        { monitor: m.id, skippedTicks: skipped, delayMs },
        'monitors fall behind: runs start after their next tick, and ticks are passed over (raise service.monitors.concurrency, or run fewer or cheaper queries)',
      );
    } else if (now - b.atMs >= 60_000) {
      this.d.log.warn(
        { skippedTicks: b.skipped + skipped, maxDelayMs: Math.max(b.maxDelayMs, delayMs) },
        'monitors still behind in the last minute',
      );
      this.behindSince = { atMs: now, skipped: 0, maxDelayMs: 0 };
    } else {
      b.skipped += skipped;
      b.maxDelayMs = Math.max(b.maxDelayMs, delayMs);
    }
    return skipped;
  }

  /** One claimed monitor's run: its state after, what to notify, and the record (sent once all are stored). */
  private async runOne(
    id: string,
    tickMs: number,
    results: Map<string, Promise<QueryOutcome>>,
  ): Promise<{ m: Monitor; state: MonitorState; notifications: AlertNotification[]; record: RunRecord } | undefined> {
    const m = this.d.monitors.get(id);
    const claimed = this.d.states.get(id);
    if (!m || !claimed) return undefined; // deleted meanwhile
    const startedAt = this.d.clock.now();
    const state: MonitorState = structuredClone(claimed);
    const delayMs = Math.max(0, startedAt - tickMs);
    const skippedTicks = this.skipped(m, tickMs, delayMs);

    const endMs = tickMs - m.secondDelay * 1000;
    let startNs = BigInt(endMs - m.rangeMinutes * 60_000) * NS_PER_MS;
    const endNs = BigInt(endMs) * NS_PER_MS;
    if (m.type === 'MatchEvent' && state.matchCursorNs !== undefined) {
      const cursor = BigInt(state.matchCursorNs);
      if (cursor >= endNs) return undefined; // a window already read (the delay was raised)
      startNs = cursor + 1n;
    }
    const record: RunRecord = {
      _time: new Date(tickMs).toISOString(),
      monitorId: m.id,
      monitorName: m.name,
      datasets: [...m.datasets],
      type: m.type,
      queryStartTime: formatRfc3339Nano(startNs),
      queryEndTime: formatRfc3339Nano(endNs),
      delayMs,
      durationMs: 0,
      state: 'normal',
      value: null,
      rowsMatched: 0,
      groups: 0,
      opened: 0,
      closed: 0,
      notified: 0,
      notificationsFailed: 0,
      notificationError: null,
      suppressed: 0,
      skippedTicks,
      error: null,
    };
    const t0 = Date.now();
    let notifications: AlertNotification[] = [];
    try {
      const who = this.d.principalFor(runsAs(m));
      if (typeof who === 'string') throw new Error(who);
      const outcome = await this.query(m, who, startNs, endNs, results);
      await this.noteDatasets(m, outcome.datasets);
      record.datasets = [...new Set([...record.datasets, ...outcome.datasets])];
      record.rowsMatched = outcome.status.rowsMatched;
      const window = { start: new Date(Number(startNs / NS_PER_MS)), end: new Date(endMs) };
      if (m.type === 'MatchEvent') {
        notifications = this.matchRun(m, state, outcome, window, record);
        state.matchCursorNs = endNs.toString();
      } else {
        let observations: Observation[];
        if (m.type === 'Threshold') observations = evaluateThreshold(m, outcome.tables[0]!);
        else {
          const dayNs = BigInt(m.compareDays) * 86_400_000_000_000n;
          const baseline =
            m.compareDays > 0
              ? (await this.query(m, who, startNs - dayNs, endNs - dayNs, results)).tables[0]
              : undefined;
          observations = evaluateAnomaly(m, outcome.tables[0]!, baseline);
        }
        const now = new Date(this.d.clock.now()).toISOString();
        const step = stepAlerts(m, state.groups, observations, now);
        state.groups = step.groups;
        record.groups = observations.length;
        record.opened = step.changes.filter((c) => c.action === 'Open').length;
        record.closed = step.changes.filter((c) => c.action === 'Closed').length;
        const open = Object.values(step.groups).some((g) => g.open);
        record.state = open ? 'triggered' : observations.every((o) => o.noData) ? 'no data' : 'normal';
        const decisive = observations.find((o) => o.positive) ?? observations[0];
        record.value = decisive?.value ?? null;
        if (step.dropped)
          record.error = `${step.dropped} group(s) beyond the ${Object.keys(step.groups).length} tracked were not evaluated`;
        await this.d.history.add(
          step.changes.map((c) => ({
            checkId: m.id,
            name: m.name,
            state: c.action === 'Open' ? 'open' : 'closed',
            timestamp: now,
            group: c.key,
          })),
        );
        notifications = step.notify.map((e) => this.notification(m, e, window));
      }
    } catch (e) {
      record.state = 'error';
      record.error = (e as Error).message;
      this.d.log.warn({ monitor: m.id, name: m.name, err: (e as Error).message }, 'monitor run failed');
    }
    record.durationMs = Date.now() - t0;
    this.counts.runs++;
    if (record.state === 'error') this.counts.runErrors++;
    this.counts.suppressed += record.suppressed;
    state.lastRun = { time: record._time, state: record.state, value: record.value, error: record.error };
    return { m, state, notifications, record };
  }

  /**
   * A pattern (`union d*`, `search`) may read a dataset made since the monitor was saved: who may see the
   * monitor, its history and its runs' figures follows what it reads, so the datasets it read are added to
   * its own before anything of the run is recorded. They only grow until its query is chosen again.
   */
  private async noteDatasets(m: Monitor, read: readonly string[]): Promise<void> {
    if (read.every((d) => m.datasets.includes(d))) return;
    await this.d.monitors.update(m.id, (cur) => ({ ...cur, datasets: [...new Set([...cur.datasets, ...read])] }));
  }

  /** The monitor's query over a window, once per batch (the monitors of a batch read the same rows). */
  private query(
    m: Monitor,
    who: Principal,
    startNs: bigint,
    endNs: bigint,
    results: Map<string, Promise<QueryOutcome>>,
  ): Promise<QueryOutcome> {
    const key = `${startNs} ${endNs}`;
    let result = results.get(key);
    if (!result) {
      const window = {
        startTime: formatRfc3339Nano(startNs),
        endTime: formatRfc3339Nano(endNs),
        canQuery: (ds: string) => canDataset(who, ds, 'query', 'read'),
      };
      result = m.mplQuery
        ? this.d.mpl.run({ mpl: m.mplQuery, ...window }).then((r) => mplOutcome(r, endNs))
        : this.d.engine.prepare({ apl: m.aplQuery, ...window }).then((prepared) => this.d.engine.execute(prepared));
      results.set(key, result);
    }
    return result;
  }

  /** One Open per matching event, within the caps; the rest are counted as suppressed. */
  private matchRun(
    m: Monitor,
    state: MonitorState,
    outcome: QueryOutcome,
    window: { start: Date; end: Date },
    record: RunRecord,
  ): AlertNotification[] {
    const events = matchedEvents(outcome.tables[0]!, true);
    const now = this.d.clock.now();
    const minute = Math.floor(now / 60_000);
    const day = new Date(now).toISOString().slice(0, 10);
    const caps = state.caps ?? { minute, minuteCount: 0, day, dayCount: 0 };
    if (caps.minute !== minute) Object.assign(caps, { minute, minuteCount: 0 });
    if (caps.day !== day) Object.assign(caps, { day, dayCount: 0 });
    const out: AlertNotification[] = [];
    for (const ev of events) {
      if (caps.minuteCount >= MATCH_CAPS.perMinute || caps.dayCount >= MATCH_CAPS.perDay) break;
      caps.minuteCount++;
      caps.dayCount++;
      const body = JSON.stringify(ev);
      out.push({
        action: 'Open',
        monitorId: m.id,
        title: m.name,
        description: m.description,
        body,
        value: null,
        queryStartTime: window.start,
        queryEndTime: window.end,
        timestamp: new Date(now),
        matchedEvent: ev,
        groupKeys: null,
        groupValues: null,
        alertKey: `${m.id}:${createHash('sha256').update(body).digest('hex').slice(0, 16)}`,
      });
    }
    state.caps = caps;
    record.suppressed = Math.max(0, outcome.status.rowsMatched - out.length);
    record.state = events.length ? 'triggered' : 'normal';
    record.opened = out.length;
    return out;
  }

  private notification(m: Monitor, e: AlertEvent, window: { start: Date; end: Date }): AlertNotification {
    const o = e.observation;
    return {
      action: e.action,
      monitorId: m.id,
      title: m.name,
      description: m.description,
      body: o.sentence,
      value: o.value ?? 0,
      queryStartTime: window.start,
      queryEndTime: window.end,
      timestamp: new Date(this.d.clock.now()),
      matchedEvent: null,
      groupKeys: o.groupKeys,
      groupValues: o.groupValues,
      alertKey: `${m.id}:${e.key}`,
    };
  }

  /** Delivers to every notifier of the monitor that is not snoozed, then records the run with the outcome. */
  private send(m: Monitor, notifications: AlertNotification[], record: RunRecord): void {
    const now = this.d.clock.now();
    const targets = m.notifierIds
      .map((id) => this.d.notifiers.get(id))
      .filter((n): n is Notifier => !!n && !isSnoozed(n, now));
    if (!notifications.length || !targets.length) {
      this.d.runs.add(record);
      return;
    }
    const work = (async () => {
      const outcomes: DeliveryOutcome[] = [];
      for (const n of notifications) {
        outcomes.push(...(await Promise.all(targets.map((t) => deliver(t, n, this.d.outbound, this.d.delivery)))));
      }
      record.notified = outcomes.filter((o) => o.delivered).length;
      const failed = outcomes.filter((o) => !o.delivered);
      record.notificationsFailed = failed.length;
      this.counts.notificationsSent += record.notified;
      this.counts.notificationsFailed += failed.length;
      if (failed.length) {
        record.notificationError = `${failed[0]!.channel} notifier ${failed[0]!.notifierId}: ${failed[0]!.error}`;
        this.lastNotificationFailure = {
          time: new Date(this.d.clock.now()).toISOString(),
          monitorId: m.id,
          error: record.notificationError,
        };
        this.d.log.warn(
          { monitor: m.id, failed: failed.length, first: record.notificationError },
          'monitor notifications failed',
        );
      }
      this.d.runs.add(record);
    })();
    this.deliveries.add(work);
    void work.finally(() => this.deliveries.delete(work));
  }
}
