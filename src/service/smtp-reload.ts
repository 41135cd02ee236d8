/**
 * service.notifiers.smtp is the one service setting a SIGHUP changes (ferry agent and ferry serve): the
 * mail held in the outbox while no server was configured is sent through the new one. Types only from the
 * service, so a remote-only agent loads no DuckDB for it.
 */
import type { Logger } from 'pino';
import type { ServiceConfig } from './config.js';
import type { RunningService } from './service.js';

/** Applies a reloaded service.notifiers.smtp and says what became of the mail held in the outbox. */
export async function reloadSmtp(
  service: Pick<RunningService, 'alerting'>,
  smtp: ServiceConfig['notifiers']['smtp'],
  log: Logger,
): Promise<void> {
  const before = service.alerting.outbound.outbox.count;
  await service.alerting.setSmtp(smtp);
  const after = service.alerting.outbound.outbox.count;
  log.info(
    { smtp: smtp ? `${smtp.host}:${smtp.port}` : 'none', outboxSent: Math.max(0, before - after), outboxHeld: after },
    'SIGHUP: service.notifiers.smtp reloaded',
  );
}
