/**
 * Every monitor run, recorded as an event in a dataset of its own (service.monitors.runs_dataset), so runs
 * can be queried with APL like any data (written by store/event-log.ts).
 */
import type { Logger } from 'pino';
import type { EventStore } from '../store/event-store.js';
import { keepRunRecords } from '../auth/capabilities.js';
import { EventLog } from '../store/event-log.js';

export interface RunRecord {
  _time: string;
  monitorId: string;
  monitorName: string;
  /**
   * The datasets the run's figures come from: who may see them (/v2/monitors/{id}/runs) follows these,
   * not the monitor's datasets now, which change with its query.
   */
  datasets: string[];
  type: string;
  queryStartTime: string;
  queryEndTime: string;
  /** How long after its tick the run started, and how long it took (ms). */
  delayMs: number;
  durationMs: number;
  /** normal, triggered (some group open), no data, or error. */
  state: string;
  value: number | null;
  rowsMatched: number;
  groups: number;
  opened: number;
  closed: number;
  notified: number;
  notificationsFailed: number;
  notificationError: string | null;
  /** MatchEvent: matching events past the notification caps. */
  suppressed: number;
  /** Ticks of this monitor passed over since its previous run in this process: the scheduler fell behind. */
  skippedTicks: number;
  error: string | null;
}

/** Every monitor run, one event each, in service.monitors.runs_dataset. */
export type RunLog = EventLog<RunRecord>;

export function runLog(store: EventStore, dataset: string, log: Logger): RunLog {
  keepRunRecords(dataset);
  return new EventLog<RunRecord>(
    store,
    dataset,
    { description: 'Runs of monitors, one event per run', what: 'monitor runs', system: true },
    log,
  );
}
