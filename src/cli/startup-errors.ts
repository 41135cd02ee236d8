/**
 * What a failure to start means for the person who ran ferry: one line naming what to change, instead of
 * a stack trace. Pure: the error and the config in, the line out (undefined when the error is not one a
 * user causes, which then is reported with its stack).
 */
import type { FerryConfig } from './config.js';
import { StartupError } from '../util/startup-error.js';

const CODES: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'is a directory',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EMFILE: 'too many open files (raise LimitNOFILE / ulimit -n)',
};

export function explainStartupError(err: unknown, cfg?: FerryConfig): string | undefined {
  if (err instanceof StartupError) return err.message;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (!(err instanceof Error)) return undefined;
  if (e.code === 'EADDRINUSE' || (e.code === 'EACCES' && e.syscall === 'listen') || e.code === 'EADDRNOTAVAIL') {
    const where = `${e.address ?? '?'}:${e.port ?? '?'}`;
    const isService = cfg?.service.enabled && e.port === cfg.service.listen.port;
    const key = isService ? 'service.listen (env FERRY_LISTEN)' : 'agent.api.listen (env FERRY_AGENT_LISTEN)';
    const what =
      e.code === 'EADDRINUSE'
        ? 'is already in use (another ferry running?)'
        : e.code === 'EACCES'
          ? 'needs privileges (ports below 1024)'
          : 'is not an address of this host';
    return `cannot listen on ${where}: it ${what}; set ${key} to another host:port`;
  }
  const lock = /Could not set lock on file "([^"]+)": Conflicting lock is held in (\S+) \(PID (\d+)\)/.exec(e.message);
  if (lock) {
    return `the store ${lock[1]} is in use by another process (${lock[2]}, PID ${lock[3]}): stop it, or set service.data_dir (env FERRY_DATA_DIR) to another directory`;
  }
  if (e.code && CODES[e.code] && e.path) {
    return `cannot use ${e.path}: ${CODES[e.code]}${e.syscall ? ` (${e.syscall})` : ''}; check the path and its permissions in the config (data_dir, include, dead_letter)`;
  }
  if (
    /^IO Error: Cannot open (file|database)/.test(e.message) ||
    /^IO Error: Could not (create|open) directory/.test(e.message)
  ) {
    return `cannot open the store: ${e.message.replace(/^IO Error: /, '')}; check service.data_dir (env FERRY_DATA_DIR)`;
  }
  return undefined;
}
