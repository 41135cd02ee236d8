/**
 * service.notifiers.smtp is the one service setting a SIGHUP changes (ferry agent and ferry serve): the
 * mail held in the outbox while no server was configured is sent through the new one. Types only from the
 * service, so a remote-only agent loads no DuckDB for it.
 */
import type { Logger } from 'pino';
import type { ServiceConfig } from './config.js';
import type { RunningService } from './service.js';

/**
 * Applies a reloaded service.notifiers.smtp. What the outbox holds is sent in the background (logged when
 * done), so a slow server holds up no later reload.
 */
export async function reloadSmtp(
  service: Pick<RunningService, 'alerting'>,
  smtp: ServiceConfig['notifiers']['smtp'],
  log: Logger,
): Promise<void> {
  await service.alerting.setSmtp(smtp);
  log.info(
    { smtp: smtp ? `${smtp.host}:${smtp.port}` : 'none', outboxHeld: service.alerting.outbound.outbox.count },
    'SIGHUP: service.notifiers.smtp reloaded',
  );
}
