/**
 * Alerting as a whole: the stored monitors, notifiers and annotations, alert state and history, the
 * scheduler and the outbound channels. The HTTP routes and the CLI go through it; it checks what the
 * caller may do with a monitor (whose datasets it must be able to query), the routes check capabilities.
 */
import { MplQueries } from '../query/mpl-queries.js';
import { MplError } from '../../mpl/errors.js';
import { MplParamError } from '../../mpl/binder.js';
import type { Logger } from 'pino';
import type { MonitorsConfig, NotifiersConfig } from '../config.js';
import { AplError } from '../../apl/errors.js';
import {
  canDataset,
  canOrg,
  canQuerySomething,
  excessRights,
  NotAllowed,
  type Principal,
  principalId,
} from '../auth/capabilities.js';
import { isExpired, type TokenStore } from '../auth/token-store.js';
import { FieldError } from '../bodies/fields.js';
import type { QueryEngine } from '../query/engine.js';
import { QueryInputError } from '../query/engine.js';
import { DocumentTable } from '../store/documents.js';
import type { EventStore, StoredEvent } from '../store/event-store.js';
import { hidden, notFound } from '../store/errors.js';
import type { Directory } from '../auth/directory.js';
import { tokenPrincipal, userPrincipal } from '../auth/principals.js';
import type { Annotation } from '../annotations/annotation.js';
import { channelOf, newNotifierId, type Notifier, readNotifierBody } from '../notifiers/notifier.js';
import { MAX_HELD_AGE_MS, type Resolve } from '../notifiers/outbox.js';
import { outbound, type Outbound } from '../notifiers/outbound.js';
import { AlertHistory } from './history.js';
import { type Monitor, newMonitorId, readMonitorBody, runsAs } from './monitor.js';
import { checkMonitorQuery } from './monitor-query.js';
import { runLog } from './run-log.js';
import { type Clock, latestTick, MonitorScheduler, type MonitorState, systemClock } from './scheduler.js';

export interface AlertingOptions {
  monitors: MonitorsConfig;
  notifiers: NotifiersConfig;
  /** Where mail waits while no SMTP server is configured. */
  outboxPath: string;
  clock?: Clock;
  /** Runs monitors of metrics (mplQuery); made from the store, with no time limit, when not given. */
  mpl?: MplQueries;
}

export class Alerting {
  private constructor(
    readonly monitors: DocumentTable<Monitor>,
    readonly notifiers: DocumentTable<Notifier>,
    readonly annotations: DocumentTable<Annotation>,
    readonly states: DocumentTable<MonitorState>,
    readonly history: AlertHistory,
    readonly scheduler: MonitorScheduler,
    readonly outbound: Outbound,
    private readonly engine: QueryEngine,
    private readonly mpl: MplQueries,
    private readonly clock: Clock,
    private readonly runsEnabled: boolean,
    private readonly stopping: AbortController,
    /** A user or API token by id, as a principal with its rights now (or why it is none). */
    private readonly principalOf: (id: string) => Principal | string,
  ) {}

  static async open(
    store: EventStore,
    engine: QueryEngine,
    tokens: TokenStore,
    directory: Directory,
    log: Logger,
    o: AlertingOptions,
  ): Promise<Alerting> {
    const db = store.db;
    const [monitors, notifiers, annotations, states, history] = await Promise.all([
      DocumentTable.open<Monitor>(db, 'ferry_monitors'),
      DocumentTable.open<Notifier>(db, 'ferry_notifiers'),
      DocumentTable.open<Annotation>(db, 'ferry_annotations'),
      DocumentTable.open<MonitorState>(db, 'ferry_monitor_state'),
      AlertHistory.open(db),
    ]);
    const clock = o.clock ?? systemClock;
    // A held mail goes out as its notifier says when it can go: to its addresses then, and not at all once
    // the notifier or the monitor is gone, or the mail is too old to matter.
    const resolveHeld: Resolve = (m) => {
      if (Date.now() - Date.parse(m.at) > MAX_HELD_AGE_MS)
        return { setAside: `held since ${m.at}, longer than ${MAX_HELD_AGE_MS / 86_400_000} days` };
      if (m.notifierId === undefined) return m;
      const n = notifiers.get(m.notifierId);
      if (!n) return { setAside: `its notifier ${m.notifierId} was deleted` };
      const { key, settings } = channelOf(n);
      if (key !== 'email') return { setAside: `its notifier ${n.name} no longer sends e-mail` };
      if (m.monitorId && !monitors.get(m.monitorId)) return { setAside: `its monitor ${m.monitorId} was deleted` };
      return { ...m, to: (settings as { emails: string[] }).emails };
    };
    const out = outbound(o.notifiers, {
      path: o.outboxPath,
      resolve: resolveHeld,
      onFlushed: ({ sent, kept, setAside }) => {
        log.info({ sent, kept, setAside: setAside.length }, 'mail held in the outbox: sent through the SMTP server');
        for (const { mail, why } of setAside.slice(0, 20))
          log.warn(
            { subject: mail.subject, heldAt: mail.at, why },
            'a mail held in the outbox was set aside, not sent',
          );
      },
    });
    if (out.outbox.movedAside)
      log.error(
        { movedTo: out.outbox.movedAside },
        'the mail outbox was larger than Ferry ever writes it, so it was moved aside unread',
      );
    const principalOf = (id: string) => principalFor(id, tokens, directory, clock.now());
    const stopping = new AbortController();
    const mpl = o.mpl ?? new MplQueries(store);
    const scheduler = new MonitorScheduler({
      monitors,
      states,
      notifiers,
      engine,
      mpl,
      outbound: out,
      history,
      clock,
      log,
      principalFor: principalOf,
      delivery: { attempts: o.notifiers.attempts, firstDelayMs: 1000, maxDelayMs: 60_000, signal: stopping.signal },
      runs: runLog(store, o.monitors.runsDataset, log),
      concurrency: o.monitors.concurrency,
    });
    return new Alerting(
      monitors,
      notifiers,
      annotations,
      states,
      history,
      scheduler,
      out,
      engine,
      mpl,
      clock,
      o.monitors.enabled,
      stopping,
      principalOf,
    );
  }

  start(): void {
    if (this.runsEnabled) this.scheduler.start();
    // Mail held before a restart goes out once a server is there.
    void this.outbound.flushOutbox().catch(() => undefined);
  }

  /** service.notifiers.smtp from a reloaded config: mail held meanwhile is sent through the new server. */
  async setSmtp(smtp: NotifiersConfig['smtp']): Promise<void> {
    await this.outbound.setSmtp(smtp);
  }

  /** Stops scheduling, ends retries, and waits for the runs in progress to be recorded. */
  async close(): Promise<void> {
    this.stopping.abort();
    await this.scheduler.stop();
    await this.outbound.close();
  }

  nowIso(): string {
    return new Date(this.clock.now()).toISOString();
  }

  /**
   * What keeps alerts from flowing: monitors whose last run failed (a refused identity, a query that no
   * longer binds), the last notification that could not be delivered in the past hour, and the last tick
   * passed over in the past ten minutes because runs fell behind.
   */
  health(): {
    monitors: number;
    failing: { id: string; name: string; error: string; since: string }[];
    lastNotificationFailure?: { time: string; monitorId: string; error: string };
    lastSkippedTick?: { time: string; monitorId: string; skippedTicks: number; delayMs: number };
    outbox?: { mails: number; since: string; path: string; reason: string };
  } {
    const failing = this.monitors.list().flatMap((m) => {
      const last = this.states.get(m.id)?.lastRun;
      return last?.state === 'error' ? [{ id: m.id, name: m.name, error: last.error ?? '', since: last.time }] : [];
    });
    const nf = this.scheduler.lastNotificationFailure;
    const recent = nf && Date.parse(nf.time) > this.clock.now() - 3_600_000 ? nf : undefined;
    const skip = this.scheduler.lastSkippedTick;
    const behind = skip && Date.parse(skip.time) > this.clock.now() - 600_000 ? skip : undefined;
    return {
      monitors: this.monitors.size,
      failing,
      ...(recent ? { lastNotificationFailure: recent } : {}),
      ...(behind ? { lastSkippedTick: behind } : {}),
      ...(this.outbound.outbox.count > 0
        ? {
            outbox: {
              mails: this.outbound.outbox.count,
              since: this.outbound.outbox.since!,
              path: this.outbound.outbox.path,
              reason: 'not sent: no SMTP server is configured (service.notifiers.smtp), or it refused them',
            },
          }
        : {}),
    };
  }

  // ---- monitors ----------------------------------------------------------------------------------------

  /** A caller sees a monitor only when it may query every dataset the monitor reads. */
  canSee(p: Principal, m: Monitor): boolean {
    return m.datasets.every((ds) => canDataset(p, ds, 'query', 'read'));
  }

  visibleMonitor(p: Principal, id: string): Monitor {
    const m = this.monitors.get(id);
    if (!m) throw notFound(`monitor "${id}"`);
    if (!this.canSee(p, m)) throw hidden(`monitor "${id}"`);
    return m;
  }

  /**
   * A visible monitor's recorded runs within [start, end], newest first: those whose datasets the caller
   * may all query (a run before the query changed read others; a run recorded before runs named their
   * datasets, only for who may read the runs dataset itself). A failed delivery's cause names the
   * notifier's channel and answer: shown to callers who may read notifiers, else only counted.
   */
  async runs(p: Principal, id: string, startMs: number, endMs: number, limit: number): Promise<StoredEvent[]> {
    const m = this.visibleMonitor(p, id);
    const runs = await this.scheduler.runLog.read({
      startNs: BigInt(startMs) * 1_000_000n,
      endNs: BigInt(endMs) * 1_000_000n,
      order: 'desc',
      limit,
      match: { field: 'monitorId', value: m.id },
    });
    const mayReadNotifiers = canOrg(p, 'notifiers', 'read');
    const runsDataset = this.scheduler.runLog.dataset;
    return runs
      .filter((run) =>
        Array.isArray(run.datasets)
          ? run.datasets.every((ds) => typeof ds === 'string' && canDataset(p, ds, 'query', 'read'))
          : canDataset(p, runsDataset, 'query', 'read'),
      )
      .map(({ _sysTime: _s, _rowId: _r, ...run }) =>
        mayReadNotifiers || run.notificationError == null ? run : { ...run, notificationError: null },
      ) as StoredEvent[];
  }

  async createMonitor(p: Principal, body: unknown): Promise<Monitor> {
    const fields = readMonitorBody(body);
    const datasets = await this.checkMonitor(p, fields);
    const now = this.nowIso();
    const m: Monitor = {
      ...fields,
      id: newMonitorId(),
      createdAt: now,
      createdBy: principalId(p),
      updatedAt: now,
      datasets,
      runAs: principalId(p),
    };
    // Armed first: the scheduler never sees a monitor without its state (it would run it at once).
    await this.scheduler.arm(m);
    await this.monitors.put(m);
    return this.dropDeletedNotifiers(m);
  }

  /**
   * An update is checked as the caller, and when it changes what the monitor reads or where it sends, the
   * runs carry the caller's rights from then on: a monitor never reads or delivers more than whoever last
   * chose those may (a caller who reads less cannot borrow its maker's rights by rewriting the query).
   */
  async updateMonitor(p: Principal, id: string, body: unknown): Promise<Monitor> {
    const old = this.visibleMonitor(p, id);
    const fields = readMonitorBody(body);
    const rechosen =
      old.aplQuery !== fields.aplQuery ||
      (old.mplQuery ?? '') !== fields.mplQuery ||
      old.notifierIds.length !== fields.notifierIds.length ||
      old.notifierIds.some((n) => !fields.notifierIds.includes(n));
    // Otherwise the runs keep their principal: the query is bound as it (a pattern reads what it may),
    // and the caller must be able to read all of that, or it could learn it through thresholds and history.
    const keeper = rechosen ? undefined : this.principalOf(runsAs(old));
    let runAs = principalId(p);
    let datasets: string[];
    if (keeper === undefined || typeof keeper === 'string') datasets = await this.checkMonitor(p, fields);
    else {
      datasets = await this.checkMonitor(keeper, fields, p);
      if (!datasets.every((ds) => canDataset(p, ds, 'query', 'read'))) throw hidden(`monitor "${id}"`);
      runAs = runsAs(old);
    }
    const m: Monitor = { ...old, ...fields, datasets, runAs, updatedAt: this.nowIso() };
    // What an alert means changed: its groups and match cursor start over. A new interval starts from the
    // tick it is in. Both before the monitor changes, so that no run sees the new monitor with the old state.
    const restart =
      old.type !== m.type ||
      old.aplQuery !== m.aplQuery ||
      (old.mplQuery ?? '') !== (m.mplQuery ?? '') ||
      old.notifyByGroup !== m.notifyByGroup;
    if (restart || old.intervalMinutes !== m.intervalMinutes) {
      await this.states.update(id, (st) => ({
        ...st,
        ...(restart ? { groups: {}, matchCursorNs: undefined } : {}),
        ...(old.intervalMinutes !== m.intervalMinutes ? { lastTickMs: latestTick(m, this.clock.now()) } : {}),
      }));
    }
    const stored = await this.monitors.update(id, (current) => ({
      ...current,
      ...fields,
      datasets,
      runAs,
      updatedAt: m.updatedAt,
    }));
    if (!stored) throw notFound(`monitor "${id}"`);
    return this.dropDeletedNotifiers(stored);
  }

  /**
   * A notifier deleted while this monitor was checked and stored is taken out of it, as deleteNotifier takes
   * it out of every stored monitor: one of the two sees the other's change, whichever ends first.
   */
  private async dropDeletedNotifiers(m: Monitor): Promise<Monitor> {
    if (m.notifierIds.every((n) => this.notifiers.has(n))) return m;
    const stored = await this.monitors.update(m.id, (cur) => ({
      ...cur,
      notifierIds: cur.notifierIds.filter((n) => this.notifiers.has(n)),
    }));
    return stored ?? m;
  }

  async deleteMonitor(p: Principal, id: string): Promise<void> {
    this.visibleMonitor(p, id);
    await this.monitors.delete(id);
    await this.scheduler.forget(id);
  }

  /**
   * Binds the query as `p`, whose rights the runs will carry (403 for a dataset it may not query), and
   * checks it fits the type and that `caller` may use its notifiers.
   */
  private async checkMonitor(
    p: Principal,
    m: ReturnType<typeof readMonitorBody>,
    caller: Principal = p,
  ): Promise<string[]> {
    if (!canQuerySomething(p))
      throw new NotAllowed(
        'a monitor runs its query with the rights of who sets it, and this token holds the query|read capability on no dataset',
      );
    for (const id of m.notifierIds) {
      const n = this.notifiers.get(id);
      if (!n) throw new FieldError('notifierIds', `holds "${id}", which is not a notifier`);
      // A monitor sends through another's notifier (and its credentials) only for who may see notifiers.
      if (n.createdBy !== principalId(caller) && !canOrg(caller, 'notifiers', 'read'))
        throw new NotAllowed(`sending through notifier "${n.name}", which someone else made, takes notifiers|read`);
    }
    const end = this.clock.now();
    if (m.mplQuery) {
      try {
        const { plan } = this.mpl.prepare({
          mpl: m.mplQuery,
          startTime: new Date(end - m.rangeMinutes * 60_000).toISOString(),
          endTime: new Date(end).toISOString(),
          canQuery: (ds) => canDataset(p, ds, 'query', 'read'),
        });
        return [plan.dataset];
      } catch (e) {
        if (e instanceof MplError || e instanceof MplParamError || e instanceof QueryInputError)
          throw new FieldError('mplQuery', `is not a query this service can run: ${e.message}`);
        throw e;
      }
    }
    let prepared;
    try {
      // Fields the datasets do not have yet bind as null here: terraform makes datasets, then monitors, and
      // the data comes later. Runs bind strictly and report a missing field until it exists.
      prepared = await this.engine.prepare({
        apl: m.aplQuery,
        startTime: new Date(end - m.rangeMinutes * 60_000).toISOString(),
        endTime: new Date(end).toISOString(),
        canQuery: (ds) => canDataset(p, ds, 'query', 'read'),
        unknownNames: 'null',
      });
    } catch (e) {
      if (e instanceof AplError || e instanceof QueryInputError)
        throw new FieldError('aplQuery', `is not a query this service can run: ${e.message}`);
      throw e;
    }
    checkMonitorQuery(m.type, m.aplQuery, prepared.bound, m.columnName);
    return prepared.bound.datasets;
  }

  // ---- notifiers ---------------------------------------------------------------------------------------

  getNotifier(id: string): Notifier {
    const n = this.notifiers.get(id);
    if (!n) throw notFound(`notifier "${id}"`);
    return n;
  }

  /**
   * What the caller lacks to change or delete a notifier, or undefined. Its maker may (a monitor that sends
   * through it chose to trust the maker's destination). Anyone else needs every right the maker holds, or
   * to manage users (users|update), the only way to change a notifier whose maker is gone: a lesser principal
   * may not point another's notifier, and what it sends, elsewhere. And they must be able to read what flows
   * through it: every dataset the monitors sending through it read.
   */
  notifierExcess(p: Principal, n: Notifier, action: 'update' | 'delete'): string | undefined {
    if (!canOrg(p, 'notifiers', action)) return `notifiers|${action}`;
    if (principalId(p) === n.createdBy) return undefined;
    if (!canOrg(p, 'users', 'update')) {
      const maker = this.principalOf(n.createdBy);
      if (typeof maker === 'string') return 'users|update (its maker is gone: only who manages users may change it)';
      const excess = excessRights(p.rights, maker.rights);
      if (excess) return `${excess} (a right of its maker; or users|update)`;
    }
    if (action === 'delete') return undefined;
    for (const m of this.monitors.list()) {
      if (!m.notifierIds.includes(n.id)) continue;
      const unread = m.datasets.find((ds) => !canDataset(p, ds, 'query', 'read'));
      if (unread) return `query|read on dataset "${unread}", which monitor "${m.name}" sends through this notifier`;
    }
    return undefined;
  }

  /** Whether the caller may see the notifier whole (URLs that are credentials included). */
  seesWhole(p: Principal, n: Notifier): boolean {
    return this.notifierExcess(p, n, 'update') === undefined;
  }

  private mayManage(p: Principal, n: Notifier, action: 'update' | 'delete'): void {
    const excess = this.notifierExcess(p, n, action);
    if (excess) throw new NotAllowed(`to ${action} notifier "${n.name}" this token lacks ${excess}`);
  }

  async createNotifier(p: Principal, body: unknown): Promise<Notifier> {
    const now = this.nowIso();
    return this.notifiers.put({
      ...readNotifierBody(body, this.outbound),
      id: newNotifierId(),
      createdAt: now,
      createdBy: principalId(p),
      updatedAt: now,
    });
  }

  async updateNotifier(p: Principal, id: string, body: unknown): Promise<Notifier> {
    const old = this.getNotifier(id);
    this.mayManage(p, old, 'update');
    const fields = readNotifierBody(body, this.outbound, old);
    const stored = await this.notifiers.update(id, (cur) => ({ ...cur, ...fields, updatedAt: this.nowIso() }));
    if (!stored) throw notFound(`notifier "${id}"`);
    return stored;
  }

  /** Deleting a notifier takes it out of every monitor that named it. */
  async deleteNotifier(p: Principal, id: string): Promise<void> {
    this.mayManage(p, this.getNotifier(id), 'delete');
    await this.notifiers.delete(id);
    for (const m of this.monitors.list()) {
      if (m.notifierIds.includes(id))
        await this.monitors.update(m.id, (cur) => ({ ...cur, notifierIds: cur.notifierIds.filter((n) => n !== id) }));
    }
  }
}

/** The identity a monitor runs under: the user that created it, with its rights now, or the API token while it is valid. */
export function principalFor(
  createdBy: string,
  tokens: TokenStore,
  directory: Directory,
  nowMs: number,
): Principal | string {
  const user = directory.user(createdBy);
  if (user) return userPrincipal(user, directory);
  const t = tokens.get(createdBy);
  if (!t)
    return `the user or API token that created this monitor (${createdBy}) was removed; re-create the monitor with a valid identity`;
  if (isExpired(t, nowMs)) return `the API token that created this monitor (${t.name}) expired at ${t.expiresAt}`;
  return tokenPrincipal(t);
}
