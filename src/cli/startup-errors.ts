/**
 * What a failure to start means for the person who ran ferry: one line naming what to change, instead of
 * a stack trace. Pure: the error and the config in, the line out (undefined when the error is not one a
 * user causes, which then is reported with its stack).
 */
import type { FerryConfig } from './config.js';
import { resolve } from 'node:path';
import { StartupError } from '../util/startup-error.js';
import { errnoWords } from '../util/errno-words.js';

/** camelCase settings names back to the config's snake_case keys (`certFile` → `cert_file`). */
const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Every path the config names, with the key that names it: `[["sources.app.include", "/var/log/x.log"]…]`. */
export function configPaths(cfg: FerryConfig, serviceDataDirKey = 'service.data_dir'): [key: string, path: string][] {
  const out: [string, string][] = [
    [serviceDataDirKey, cfg.service.dataDir],
    ['agent.data_dir', cfg.agent.dataDir],
  ];
  const walk = (key: string, value: unknown): void => {
    if (typeof value === 'string') {
      // A path: absolute or relative, without glob characters (a pattern names no one file).
      if (/^(\/|\.\.?\/)/.test(value) && !/[*?[{]/.test(value)) out.push([key, value]);
    } else if (Array.isArray(value)) {
      for (const v of value) walk(key, v);
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(`${key}.${snake(k)}`, v);
    }
  };
  // A component's settings by their own names: those named as its keys are (journald's `journalctl`
  // is read from `journalctl_path`, and is no path of the config's).
  const component = (key: string, c: { settings: unknown; spec: { options: object } }) => {
    if (!c.settings || typeof c.settings !== 'object') return;
    for (const [k, v] of Object.entries(c.settings)) if (snake(k) in c.spec.options) walk(`${key}.${snake(k)}`, v);
  };
  for (const s of cfg.agent.sources) component(`sources.${s.name}`, s);
  for (const s of cfg.agent.sinks) {
    component(`sinks.${s.name}`, s);
    if (s.deadLetter) out.push([`sinks.${s.name}.dead_letter`, s.deadLetter]);
  }
  return out;
}

/** The key whose path is `path` or holds it (the longest such), if any. */
function keyOf(path: string, cfg: FerryConfig | undefined, serviceDataDirKey?: string): string | undefined {
  if (!cfg) return undefined;
  const target = resolve(path);
  let best: { key: string; length: number } | undefined;
  for (const [key, p] of configPaths(cfg, serviceDataDirKey)) {
    const named = resolve(p);
    if ((target === named || target.startsWith(`${named}/`)) && named.length > (best?.length ?? -1)) {
      best = { key, length: named.length };
    }
  }
  return best?.key;
}

/**
 * @param serviceDataDirKey what set service.data_dir when not the config: `--data-dir`, `FERRY_DATA_DIR`
 */
export function explainStartupError(err: unknown, cfg?: FerryConfig, serviceDataDirKey?: string): string | undefined {
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
  const words = errnoWords(e.code);
  if (words && e.path) {
    const key = keyOf(e.path, cfg, serviceDataDirKey);
    const doing = e.syscall ? ` (${e.syscall})` : '';
    return key
      ? `${key}: ${e.path}: ${words}${doing}`
      : `cannot use ${e.path}: ${words}${doing}; check the paths in the config (data_dir, include, dead_letter)`;
  }
  if (
    /^IO Error: Cannot open (file|database)/.test(e.message) ||
    /^IO Error: Could not (create|open) directory/.test(e.message)
  ) {
    return `cannot open the store: ${e.message.replace(/^IO Error: /, '')}; check service.data_dir (env FERRY_DATA_DIR)`;
  }
  return undefined;
}
