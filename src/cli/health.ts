/**
 * `ferry health`: whether the ferry running on these data directories is healthy, from the health file it
 * writes (health-file.ts), in one line and the exit code a HEALTHCHECK or a probe reads: 0 or 1, never
 * 2 (Docker keeps 2 for itself), a mistake in the command included.
 */
import { parseArgs } from 'node:util';
import { interpolate, readConfigDocument } from '../config/document.js';
import { buildConfig } from './config.js';
import { judgeHealth } from './health-file.js';

/**
 * The data directories a config names (FERRY_DATA_DIR first, as `serve` takes it): only those two keys
 * are read, so a check runs without the secrets the rest of the config takes from the environment.
 */
export function configDataDirs(file: string, env: NodeJS.ProcessEnv): string[] {
  const doc = readConfigDocument(file) as { agent?: { data_dir?: unknown }; service?: { data_dir?: unknown } } | null;
  const defaults = buildConfig({}, {});
  const dir = (v: unknown, key: string, def: string) =>
    typeof v === 'string' ? String(interpolate(v, env, key)) : def;
  return [
    dir(doc?.agent?.data_dir, 'agent.data_dir', defaults.agent.dataDir),
    env.FERRY_DATA_DIR ?? dir(doc?.service?.data_dir, 'service.data_dir', defaults.service.dataDir),
  ];
}

/** Where to look: --data-dir, a config's directories, or those the image and example configs take from the environment. */
export function healthDirs(
  values: { 'data-dir'?: string[] },
  config: string | undefined,
  env: NodeJS.ProcessEnv,
): string[] {
  if (values['data-dir']?.length) return values['data-dir'];
  if (config) return configDataDirs(config, env);
  const defaults = buildConfig({}, {});
  return [env.FERRY_AGENT_DATA_DIR ?? defaults.agent.dataDir, env.FERRY_DATA_DIR ?? defaults.service.dataDir];
}

export function healthCommand(argv: string[], out: (text: string) => void, err: (text: string) => void): number {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string', short: 'c' },
        'data-dir': { type: 'string', multiple: true },
        live: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length > 1 || (positionals.length === 1 && values.config))
      throw new Error(
        `health takes one config file, got ${[values.config, ...positionals].filter(Boolean).join(', ')}`,
      );
    const verdict = judgeHealth(healthDirs(values, values.config ?? positionals[0], process.env), values.live);
    if (values.json && verdict.record) out(`${JSON.stringify(verdict.record, null, 2)}\n`);
    else if (verdict.code === 0) out(`${verdict.line}\n`);
    else err(`ferry: ${verdict.line}\n`);
    return verdict.code;
  } catch (e) {
    err(`ferry: health: ${(e as Error).message}\n`);
    return 1;
  }
}
