#!/usr/bin/env node
/** The ferry command line. */
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { buildConfig, ConfigError, type FerryConfig, loadConfigFile, parseListen } from '../config/load.js';
import { startService } from '../service/service.js';

const USAGE = `usage: ferry <command> [options]

commands:
  serve     run the embedded event service
            --config, -c FILE     config file (YAML); default: built-in defaults
            --data-dir DIR        data directory (env FERRY_DATA_DIR; config service.data_dir)
            --listen HOST:PORT    listen address (env FERRY_LISTEN; config service.listen)
  help      show this text
`;

function fail(message: string): never {
  process.stderr.write(`ferry: ${message}\n`);
  process.exit(2);
}

function loadConfig(file: string | undefined): FerryConfig {
  return file ? loadConfigFile(file) : buildConfig({});
}

async function serve(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      'data-dir': { type: 'string' },
      listen: { type: 'string' },
    },
    strict: true,
  });
  const cfg = loadConfig(values.config);
  const listen = values.listen ?? process.env.FERRY_LISTEN;
  if (listen) cfg.service.listen = parseListen(listen, values.listen ? '--listen' : 'FERRY_LISTEN');
  const dataDir = values['data-dir'] ?? process.env.FERRY_DATA_DIR;
  if (dataDir) cfg.service.dataDir = dataDir;

  const log = pino({ level: cfg.logLevel, base: { pid: process.pid } });
  const service = await startService(cfg.service, log);
  let signals = 0;
  const stop = (sig: string) => {
    if (++signals > 1) {
      log.warn({ sig }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    log.info({ sig }, 'shutting down: finishing in-flight requests');
    service.close().then(() => process.exit(0), (err: unknown) => {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case 'serve': return serve(rest);
    case undefined: case 'help': case '--help': case '-h':
      process.stdout.write(USAGE);
      return;
    default:
      fail(`unknown command "${command}"\n${USAGE}`);
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) fail(err.message);
  if ((err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') fail((err as Error).message);
  process.stderr.write(`ferry: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
