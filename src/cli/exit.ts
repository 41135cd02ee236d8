/**
 * Ending a daemon on a signal, whatever DuckDB is doing. process.exit() joins libuv's thread pool, where
 * DuckDB statements run: one that does not notice its interrupt (a plan being made, one long expression)
 * holds the exit, and every later signal, for as long as it runs. Ending the process by SIGTERM's default
 * action joins nothing; systemd counts a stop by SIGTERM as clean, and nothing committed is lost (it is in
 * the write-ahead log). A watchdog does the same when the shutdown itself overruns its time.
 */
import type { Logger } from 'pino';

/** Exits with `code`, or at once by SIGTERM's default action while a statement still runs. */
export function exitProcess(code: number, statementRunning: () => boolean, log: Logger): never {
  if (statementRunning()) {
    log.warn('a database statement is still running and ignores its interrupt: ending without waiting for it');
    endBySignal();
  }
  process.exit(code);
}

/** Ends the process by SIGTERM's default action (its listeners removed, so the default applies). */
function endBySignal(): never {
  process.removeAllListeners('SIGTERM');
  process.kill(process.pid, 'SIGTERM');
  // The signal is delivered at once; this line is only for the type checker.
  process.exit(143);
}

/**
 * Ends the process `ms` after a shutdown begins if it has not ended by then (a close waiting on a
 * statement that ignores its interrupt, a receiver that never answers): the shutdown's time is a promise.
 */
export function shutdownWatchdog(ms: number, log: Logger): void {
  setTimeout(() => {
    log.error({ timeoutMs: ms }, 'the shutdown did not finish within its time (agent.shutdown_timeout): ending now');
    endBySignal();
  }, ms).unref();
}
