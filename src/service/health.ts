/**
 * The embedded service's part of a health report: what keeps it from doing its work fully (monitors that
 * cannot run, notifications not delivered, records it could not write, a database reopening). The agent's
 * /health and a `ferry serve` process's health file both carry it.
 */
import type { Alerting } from './monitors/alerting.js';
import type { DatabaseHealth, RecordFailure, RunningService } from './service.js';

export interface ServiceHealth {
  /** Something above holds: the service works, not fully. */
  degraded: boolean;
  monitors: ReturnType<Alerting['health']>;
  /** Datasets the service writes about itself with records it could not write (the audit trail, monitor runs). */
  records?: RecordFailure[];
  /** The database's reopenings after fatal errors, once there was one. */
  database?: DatabaseHealth;
}

export function serviceHealth(
  service: Pick<RunningService, 'alerting' | 'recordFailures' | 'database'>,
): ServiceHealth {
  const monitors = service.alerting.health();
  const records = service.recordFailures();
  const database = service.database();
  const degraded =
    monitors.failing.length > 0 ||
    !!monitors.lastNotificationFailure ||
    !!monitors.outbox ||
    !!monitors.lastSkippedTick ||
    records.length > 0 ||
    database.reopening;
  return {
    degraded,
    monitors,
    ...(records.length ? { records } : {}),
    ...(database.lastFatal ? { database } : {}),
  };
}
