#!/usr/bin/env node
/** The ferry command line. */
import { lookupTable } from '../util/lookup.js';
import { exitProcess, shutdownWatchdog } from './exit.js';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { createLogger } from './logger.js';
import { parsers } from '../agent/parsers/index.js';
import { buildConfig, ConfigError, type FerryConfig, loadConfigFile, parseListen } from './config.js';
import {
  renderMplResult,
  renderResult,
  type MplSeriesOut,
  type OutputFormat,
  type TabularTable,
} from './query-output.js';
import { notifyReady } from './readiness.js';
import { SignalCount } from './signals.js';
import { commandFlags } from './completion.js';
import { closest } from '../config/options.js';
import { explainStartupError } from './startup-errors.js';
import { chooseDuckdbAllocator } from './duckdb-allocator.js';
import { readFileSync } from 'node:fs';
import { startHealthFile } from './health-file.js';
import { serviceHealth } from '../service/health.js';
import { callService, CommandError, findStarred, ServiceCallError, serviceTarget } from './service-client.js';

const HELP: Record<string, string> = lookupTable({
  serve: `ferry serve [--config FILE] [--data-dir DIR] [--listen HOST:PORT]
  run the embedded event service alone (the config's sources, transforms and sinks are ignored)
    --config, -c FILE     config file (YAML); default: built-in defaults (also: ferry serve FILE)
    --data-dir DIR        data directory (env FERRY_DATA_DIR; config service.data_dir)
    --listen HOST:PORT    listen address (env FERRY_LISTEN; config service.listen)
    SIGHUP reads service.notifiers.smtp from FILE again (mail held in the outbox is then sent)
`,
  agent: `ferry agent --config FILE      (or: ferry agent FILE)
  run the agent: the config's sources, transforms and sinks, and the embedded service if enabled
    SIGHUP reloads FILE; SIGTERM or SIGINT drains the queues within agent.shutdown_timeout, then exits 0
    with only a stdin source it ends with its input: exit 0 once every line is delivered, 1 if not
    (refused, or the deadline passed), saying why
`,
  validate: `ferry validate --config FILE   (or: ferry validate FILE)
  check a config and say what it runs; exit 2 naming the bad key path
`,
  query: `ferry query "<apl>" [--start T] [--end T] [--format table|json|ndjson|csv] [--local]
       ferry query --starred NAME [--start T] [--end T] [--format …]
       ferry query --mpl "<mpl>" [--param NAME=VALUE]… [--start T] [--end T] [--format …] [--local]
  run an APL query (or with --mpl, an MPL query of a metrics dataset) and print the result
    --mpl                 the text is MPL; a row a point (time, metric, tags, value); without --start,
                          --end or a range in the query, the last hour
    --param NAME=VALUE    an MPL parameter's value as MPL text (--param svc='"cart"' --param w=5m)
    --starred NAME        run the starred query of that name (yours first, then the team's), with its
                          time range unless --start or --end is given
    --start, --end        time range: RFC 3339 or relative (now-1h); default: everything up to now
    --format, -f FMT      table (default, aligned for reading), json (the whole response), ndjson, csv
    --url URL             service URL (env FERRY_URL, then FERRY_LISTEN; default: service.listen of the config)
    --token T             token (env FERRY_TOKEN; default: <data-dir>/admin-token of the config)
    --config, -c FILE     config file to take the URL and token from (the one the agent runs on)
    --local               query the data directory in this process, when no service runs on it
    --data-dir DIR        with --local: the data directory (env FERRY_DATA_DIR; default: service.data_dir)
`,
  monitors: `ferry monitors [list] | ferry monitors show ID [--runs N]
  the monitors of a running service with their state and last run; or one monitor's recent runs and
  alert changes (runs are read from service.monitors.runs_dataset with APL)
    --runs N              how many recent runs show prints (default 20)
    --url URL             service URL (env FERRY_URL; default: service.listen of the config)
    --token T             token (env FERRY_TOKEN; default: <data-dir>/admin-token of the config)
    --config, -c FILE     config file to take the URL, token and runs dataset from
`,
  users: `ferry users [list] | create NAME --email E [--role R] | role USER ROLE | token USER [--name N]
       [--expires T] | tokens USER | revoke USER TOKEN_ID | remove USER
  manage the users of a running service; USER is an id or an email, ROLE a role's id or name
    list                  every user with its role and its personal access tokens
    create NAME           a user with --email and --role (default: user); prints its id
    role USER ROLE        sets the user's base role
    token USER            issues a personal access token (xapt-…) and prints it: it is shown only once
    tokens USER           the user's personal access tokens (never their secrets)
    revoke USER TOKEN_ID  revokes one of them at once
    remove USER           removes the user and revokes its tokens
    --url URL, --token T, --config, -c FILE   as for ferry query (the owner token by default)
`,
  tokens: `ferry tokens [list] | create NAME [--ingest DATASET]… [--query DATASET]… [--org AREA=ACTIONS]…
       [--capabilities FILE] [--description D] [--expires T] | regenerate ID [--old-expires T] [--expires T]
       | delete ID
  manage the API tokens of a running service: what applications and agents ingest and query with
    list                  every API token with its expiry and capabilities (never their secrets)
    create NAME           a token; its secret is printed on stdout, once (what it is goes to stderr)
      --ingest DATASET    may ingest into DATASET (repeatable; * for every dataset)
      --query DATASET     may query DATASET (repeatable; * for every dataset)
      --org AREA=ACTIONS  organisation rights, e.g. monitors=read,create (repeatable)
      --capabilities FILE a JSON file {"datasetCapabilities": …, "orgCapabilities": …}, as the API takes
      --expires T         RFC 3339 time after which it no longer works (default: never)
    regenerate ID         a new secret for the token, printed once; the old one stops at --old-expires
                          (default now; later lets a rollout finish), the new one at --expires
    delete ID             the token stops working at once
    --url URL, --token T, --config, -c FILE   as for ferry query (the owner token by default)
`,
  tap: `ferry tap [COMPONENT…] [--where APL] [--rate N] [--limit N] [--meta]
  print the events leaving sources and transforms of a running agent as they pass (NDJSON), from its API;
  every source and transform when none is named (a route's outputs by name: split.errors)
    --where, -w APL       only events this condition holds for (as a route's: status >= 500)
    --rate N              at most N events a second (default 100; the agent skips the rest and says so)
    --limit N             stop after N events
    --meta                each line as {"component": …, "event": …}
    --api URL             the agent's API (env FERRY_AGENT_API; default: agent.api.listen of the config)
    --config, -c FILE     config file to take agent.api.listen from
`,
  top: `ferry top [--interval D] [--count N]
  each component of a running agent: events in and out per second, dropped, errors, queue, lag, state;
  refreshed in place on a terminal, as one table after another otherwise
    --interval D          between refreshes (default 1s)
    --count N             stop after N refreshes
    --api URL, --config, -c FILE   as for ferry tap
`,
  health: `ferry health [--config FILE | --data-dir DIR] [--live] [--json]
  whether the ferry agent or service running on these data directories is healthy, from the health file
  it writes there every 5 s (health.json): one line, exit 0 when ok or degraded (working, in part),
  1 when failing (a sink refused or stopped), starting, not running, or stuck (no write for 30 s), and
  for any mistake (never 2: Docker keeps it); for a HEALTHCHECK or a probe, with or without the API
    --config, -c FILE     take agent.data_dir and service.data_dir from FILE (only those keys; env
                          FERRY_DATA_DIR too); default: FERRY_AGENT_DATA_DIR and FERRY_DATA_DIR, then
                          the built-in defaults (also: ferry health FILE)
    --data-dir DIR        look in DIR (repeatable)
    --live                exit 0 whatever the status while the process runs and writes (a liveness
                          probe: a refused token is not mended by a restart)
    --json                print the whole health file
`,
  completion: `ferry completion bash|zsh|fish
  print a completion script for the shell: the commands, and each command's flags
    bash                  source <(ferry completion bash), or save it in /etc/bash_completion.d/ferry
    zsh                   ferry completion zsh > "\${fpath[1]}/_ferry"
    fish                  ferry completion fish > ~/.config/fish/completions/ferry.fish
`,
  components: `ferry components [--markdown [--section agent|service]]
  the sources, parsers, transforms and sinks this build knows, with their keys
    --markdown            the README's table of component keys
    --section S           with --markdown: the README's table of the agent's or the service's keys
`,
  pipe: `app | ferry pipe --dataset NAME [--parser P] [--url URL --token T | --local]
  ship the lines of stdin; exit 0 once every line is acknowledged (or stored, with --local),
  1 when some were not delivered or were refused (kept in the dead-letter file, named), 2 on a usage error
    --dataset, -d NAME    where the events go
    --parser, -p P        ${parsers.types.join(', ')} (default json; other lines become {message})
    --pattern RE          the regex parser's pattern, with named groups
    --url, --token        an Axiom-compatible API (env FERRY_URL, FERRY_TOKEN)
    --local               write into the local store instead (--data-dir, or the config's service.data_dir);
                          the dataset is created if missing; the service must not be running on that dir
    --max-attempts N      delivery attempts per batch before giving up (0: forever; default 10)
    --max-line-bytes N    longer lines are cut and marked truncated (default 1 MiB)
    --dead-letter FILE    where refused and undelivered events go (default: a file in the temp directory)
    --timestamp-field F, --timestamp-format FMT
                          take each event's time from field F (format: a Go layout, RFC3339, unix, unixms…)
    --label, -l k=v       a field added to every event (repeatable); --add-host adds host=<hostname>
    --multiline P         join stack traces before parsing: java, python or go; or --multiline-start RE
    --shutdown-timeout D  on SIGINT or SIGTERM, how long to deliver what was read (default 10s)
  the first failed attempt is said at once; SIGINT delivers what was read and says how much was and was not
`,
});

const USAGE = `usage: ferry <command> [options]        ferry <command> --help   ferry --version

commands:
  agent     run the agent (and the embedded service if enabled) on a config
  serve     run the embedded event service alone
  pipe      ship the lines of stdin: app | ferry pipe --dataset NAME ...
  query     run an APL query against a running service
  monitors  list monitors with their state and last run, or show one's runs
  users     list, create and remove users, set their roles, issue and revoke their tokens
  tokens    list, create, regenerate and delete API tokens (for ingest and queries)
  validate  check a config file and say what it runs
  tap       print the events leaving an agent's sources and transforms as they pass
  top       each component of a running agent with its rates, queue and lag, refreshed
  health    whether the agent or service running here is healthy (for a HEALTHCHECK or a probe)
  components  list the sources, parsers, transforms and sinks, with their keys
  completion  print a completion script for bash, zsh or fish
  help      show this text, or a command's: ferry help pipe; the config's keys: ferry help config [WORD]

exit codes: 0 success; 1 failure (not delivered, cannot start), saying why in one line; 2 usage or config error
`;

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}

/** `--help` or `-h` among a command's arguments: its help goes to stdout, and the command does not run. */
function wantsHelp(command: string, argv: string[]): boolean {
  if (!argv.includes('--help') && !argv.includes('-h')) return false;
  process.stdout.write(HELP[command] ?? USAGE);
  return true;
}

/** `--config FILE`, `-c FILE`, or the config path as the one positional argument. */
function configArg(command: string, values: { config?: string }, positionals: string[]): string | undefined {
  if (positionals.length > 1 || (positionals.length === 1 && values.config)) {
    fail(`${command} takes one config file, got ${[values.config, ...positionals].filter(Boolean).join(', ')}`);
  }
  return values.config ?? positionals[0];
}

function fail(message: string): never {
  process.stderr.write(`ferry: ${message}\n`);
  process.exit(2);
}

/** A failure to run (not a usage error): one line, exit 1. */
function die(message: string): never {
  process.stderr.write(`ferry: ${message}\n`);
  process.exit(1);
}

function loadConfig(file: string | undefined): FerryConfig {
  return file ? loadConfigFile(file) : buildConfig({});
}

async function serve(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      'data-dir': { type: 'string' },
      listen: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const file = configArg('serve', values, positionals);
  const cfg = loadConfig(file);
  started = cfg;
  const listen = values.listen ?? process.env.FERRY_LISTEN;
  if (listen) cfg.service.listen = parseListen(listen, values.listen ? '--listen' : 'FERRY_LISTEN');
  const dataDir = values['data-dir'] ?? process.env.FERRY_DATA_DIR;
  if (dataDir) cfg.service.dataDir = dataDir;
  if (dataDir) startedDataDirKey = values['data-dir'] ? '--data-dir' : 'FERRY_DATA_DIR';

  const log = createLogger(cfg.logLevel, cfg.logFormat);
  chooseDuckdbAllocator(cfg.service.memoryLimitBytes);
  // Imported here: commands that do not run the service (a remote-only agent) never load DuckDB.
  const { startService } = await import('../service/service.js');
  const { reloadSmtp } = await import('../service/smtp-reload.js');
  const starting = startService(cfg.service, log);
  // SIGHUP is a reload from here on (its default action ends the process, as it did when one came right
  // after "listening"); service.notifiers.smtp is read again, the rest of the service section takes a restart.
  onReload(file, log, async (next) => reloadSmtp(await starting, next.service.notifiers.smtp, log));
  // SIGTERM and SIGINT stop the service from here on, once it has started.
  let stopping = false;
  let service: Awaited<typeof starting> | undefined;
  const statementRunning = () => service?.store.db.statementRunning() ?? false;
  const signals = new SignalCount();
  const stop = (sig: string) => {
    if (!signals.counts(sig)) return;
    stopping = true;
    if (signals.count > 1) {
      log.warn({ sig }, 'second signal: exiting without waiting');
      exitProcess(1, statementRunning, log);
    }
    log.info({ sig }, 'shutting down: finishing in-flight requests');
    shutdownWatchdog(cfg.agent.shutdownTimeoutMs, log);
    void starting.then(
      (up) =>
        up.close().then(
          () => exitProcess(0, statementRunning, log),
          (err: unknown) => {
            log.error({ err }, 'shutdown failed');
            exitProcess(1, statementRunning, log);
          },
        ),
      () => undefined,
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  const up = await starting;
  service = up;
  process.once(
    'exit',
    startHealthFile(cfg.service.dataDir, 'serve', () => {
      const { degraded, ...parts } = serviceHealth(up);
      return { status: stopping ? 'stopping' : degraded ? 'degraded' : 'ok', ...parts };
    }),
  );
}

/**
 * On SIGHUP, reads `file` again and hands the config to `apply`, one reload after another; an invalid
 * file, or one `apply` fails on, is logged in one line and the running config kept. `outcome` hears how
 * each reload ended (the reason it failed, or undefined), for /health.
 */
function onReload(
  file: string | undefined,
  log: Logger,
  apply: (next: FerryConfig) => Promise<void>,
  outcome: (failure: string | undefined) => void = () => undefined,
): void {
  let reloading = Promise.resolve();
  process.on('SIGHUP', () => {
    reloading = reloading.then(async () => {
      if (!file) return void log.warn('SIGHUP: started without a config file; nothing to reload');
      let next: FerryConfig;
      try {
        next = loadConfigFile(file);
      } catch (e) {
        // What is wrong, with its key path, on one line: a user's mistake, not a stack trace.
        const why = (e as Error).message.replace(/\n\s*/g, ' ');
        log.error({ file }, `SIGHUP: the config is invalid; going on with the running one: ${why}`);
        outcome(why);
        return;
      }
      log.info({ file }, 'SIGHUP: reloading the config');
      try {
        await apply(next);
        outcome(undefined);
      } catch (err) {
        log.error({ err }, 'SIGHUP: the reload failed');
        outcome(`the reload failed: ${(err as Error).message}`);
      }
    });
  });
}

async function agent(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c' } },
    allowPositionals: true,
    strict: true,
  });
  const file = configArg('agent', values, positionals);
  if (!file) fail('agent needs a config: ferry agent --config FILE (e.g. config/ferry.yaml)');
  const cfg = loadConfigFile(file);
  started = cfg;
  const log = createLogger(cfg.logLevel, cfg.logFormat);
  chooseDuckdbAllocator(cfg.service.memoryLimitBytes);
  const { Agent } = await import('../agent/agent.js');
  const starting = Agent.start(cfg, log);
  // SIGHUP is a reload from here on (its default action would end the process), applied once started.
  onReload(
    file,
    log,
    async (next) => (await starting).reload(next),
    (failure) => void starting.then((a) => a.reloadOutcome(failure)),
  );
  // SIGTERM and SIGINT stop the agent from here on, once it has started (their default action would end
  // the process before its handlers were in place, as under a loaded machine right after "agent running").
  const stdinOnly = cfg.agent.sources.length > 0 && cfg.agent.sources.every((s) => s.type === 'stdin');
  const signals = new SignalCount();
  let running: Awaited<typeof starting> | undefined;
  const statementRunning = () => running?.service?.store.db.statementRunning() ?? false;
  const stop = (sig: string, requireDelivered = false) => {
    if (!signals.counts(sig)) return;
    if (signals.count > 1) {
      log.warn({ sig }, 'second signal: exiting without waiting');
      exitProcess(1, statementRunning, log);
    }
    shutdownWatchdog(cfg.agent.shutdownTimeoutMs, log);
    log.info(
      { sig, deadlineMs: cfg.agent.shutdownTimeoutMs },
      'shutting down: queueing what was read, delivering until the deadline',
    );
    // A start that fails is said by main(); a stdin agent has nobody to fix a refused token: it stops
    // waiting at once and says so.
    void starting.then(
      (agent) =>
        agent.stop(stdinOnly).then(
          (delivered) => {
            const problems = agent.undelivered();
            if (requireDelivered && (!delivered || problems.length > 0)) {
              const why =
                problems.length > 0
                  ? problems.join('; ')
                  : 'not every line was delivered within agent.shutdown_timeout';
              process.stderr.write(
                `ferry: ${why}${delivered ? '' : `; what was not delivered stays queued in ${cfg.agent.dataDir}/queues`}\n`,
              );
              exitProcess(1, statementRunning, log);
            }
            exitProcess(0, statementRunning, log);
          },
          (err: unknown) => {
            log.error({ err }, 'shutdown failed');
            exitProcess(1, statementRunning, log);
          },
        ),
      () => undefined,
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  const up = await starting;
  running = up;
  process.once(
    'exit',
    startHealthFile(cfg.agent.dataDir, 'agent', () => up.health()),
  );
  notifyReady(`running: ${cfg.agent.sources.length} source(s), ${cfg.agent.sinks.length} sink(s)`, (msg) =>
    log.warn(msg),
  );
  // With only a stdin source, the agent ends at the end of its input, once everything is delivered.
  if (stdinOnly) {
    await up.finished();
    stop('end of input', true);
  }
}

function validateCommand(argv: string[]): void {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c' } },
    allowPositionals: true,
    strict: true,
  });
  const file = configArg('validate', values, positionals);
  if (!file) fail('validate needs a config: ferry validate --config FILE');
  const cfg = loadConfigFile(file);
  const a = cfg.agent;
  process.stdout.write(
    `${file}: valid (${a.sources.length} source(s), ${a.transforms.length} transform(s), ${a.sinks.length} sink(s); ` +
      `service ${cfg.service.enabled ? `on ${cfg.service.listen.host}:${cfg.service.listen.port}` : 'disabled'})\n`,
  );
  // The flow, a component a line, and what each transform will do.
  for (const s of a.sources) process.stdout.write(`  source ${s.name} (${s.spec.type})\n`);
  for (const t of a.transforms) {
    process.stdout.write(`  transform ${t.name} (${t.spec.type}) <- ${t.inputs.join(', ')}\n`);
    for (const line of t.spec.describe?.(t.settings) ?? []) process.stdout.write(`    | ${line}\n`);
  }
  for (const s of a.sinks) process.stdout.write(`  sink ${s.name} (${s.type}) <- ${s.inputs.join(', ')}\n`);
}

async function query(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      start: { type: 'string' },
      end: { type: 'string' },
      format: { type: 'string', short: 'f', default: 'table' },
      url: { type: 'string' },
      token: { type: 'string' },
      config: { type: 'string', short: 'c' },
      starred: { type: 'string' },
      local: { type: 'boolean', default: false },
      'data-dir': { type: 'string' },
      mpl: { type: 'boolean', default: false },
      param: { type: 'string', multiple: true },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.mpl) return mplQuery(values, positionals.join(' ').trim());
  if (values.param) fail('--param is for MPL queries (--mpl)');
  let apl = positionals.join(' ').trim();
  if (values.local && values.starred !== undefined)
    fail('--starred reads the starred queries of a running service; with --local give the APL text');
  if (values.local && (values.url || values.token))
    fail('--local reads the data directory itself: no --url or --token');
  if (values.starred !== undefined && apl) fail('query takes the APL text or --starred NAME, not both');
  if (!apl && values.starred === undefined)
    fail('query needs the APL text, e.g. ferry query "[\'logs\'] | count", or --starred NAME');
  const format = values.format as OutputFormat;
  if (!['table', 'json', 'ndjson', 'csv'].includes(format))
    fail(`--format must be table, json, ndjson or csv, not "${values.format}"`);
  const cfg = loadConfig(values.config);
  const body: Record<string, string> = {};
  if (values.starred !== undefined) {
    try {
      const saved = await findStarred(serviceTarget(values, cfg), values.starred);
      apl = saved.apl;
      if (saved.startTime) body.startTime = saved.startTime;
      if (saved.endTime) body.endTime = saved.endTime;
    } catch (e) {
      if (e instanceof ServiceCallError) die(e.message);
      throw e;
    }
  }
  body.apl = apl;
  if (values.start) body.startTime = values.start;
  if (values.end) body.endTime = values.end;
  // A range the user started gives its end too: up to now, said, not a warning of an end applied for them.
  else if (values.start) body.endTime = 'now';
  if (values.local) {
    chooseDuckdbAllocator(cfg.service.memoryLimitBytes);
    const { localQuery } = await import('./local-query.js');
    const dataDir = values['data-dir'] ?? process.env.FERRY_DATA_DIR ?? cfg.service.dataDir;
    await runCommand(async () => {
      const result = (await localQuery(cfg, dataDir, body as { apl: string })) as { tables?: TabularTable[] };
      process.stdout.write(renderResult({ ...result, tables: result.tables ?? [] }, format));
    });
    return;
  }
  let answer: Awaited<
    ReturnType<
      typeof callService<{ tables?: TabularTable[]; status?: { messages?: { priority: string; msg: string }[] } }>
    >
  >;
  try {
    answer = await callService(serviceTarget(values, cfg), 'POST', '/v1/query/_apl?format=tabular', body);
  } catch (e) {
    if (e instanceof ServiceCallError) die(e.message);
    throw e;
  }
  const { json } = answer;
  if (!answer.ok) die(`query failed (${answer.status}): ${json.message ?? answer.text}`);
  for (const m of json.status?.messages ?? []) {
    if (m.priority === 'warn' || m.priority === 'error') process.stderr.write(`${m.priority}: ${m.msg}\n`);
  }
  process.stdout.write(renderResult({ ...json, tables: json.tables ?? [] }, format));
}

/** `ferry query --mpl`: an MPL query, to the service or (--local) the data directory. */
async function mplQuery(
  values: {
    start?: string;
    end?: string;
    format?: string;
    url?: string;
    token?: string;
    config?: string;
    starred?: string;
    local?: boolean;
    'data-dir'?: string;
    param?: string[];
  },
  text: string,
): Promise<void> {
  if (values.starred !== undefined) fail('--starred runs APL queries; give the MPL text with --mpl');
  if (!text) fail('query --mpl needs the MPL text, e.g. ferry query --mpl "`metrics`:`cpu` | align to 1m using avg"');
  if (values.local && (values.url || values.token))
    fail('--local reads the data directory itself: no --url or --token');
  const format = values.format as OutputFormat;
  if (!['table', 'json', 'ndjson', 'csv'].includes(format))
    fail(`--format must be table, json, ndjson or csv, not "${values.format}"`);
  const params: Record<string, string> = {};
  for (const p of values.param ?? []) {
    const eq = p.indexOf('=');
    if (eq < 1) fail(`--param takes NAME=VALUE (such as svc='"cart"' or w=5m), not "${p}"`);
    params[`param__${p.slice(0, eq).replace(/^\$/, '')}`] = p.slice(eq + 1);
  }
  const body: Record<string, unknown> = { mpl: text, params };
  if (values.start || values.end) {
    body.startTime = values.start ?? 'now-1h';
    body.endTime = values.end ?? 'now';
  } else if (!(await hasOwnRange(text))) {
    body.startTime = 'now-1h';
    body.endTime = 'now';
  }
  const cfg = loadConfig(values.config);
  if (values.local) {
    chooseDuckdbAllocator(cfg.service.memoryLimitBytes);
    const { localMplQuery } = await import('./local-query.js');
    const dataDir = values['data-dir'] ?? process.env.FERRY_DATA_DIR ?? cfg.service.dataDir;
    await runCommand(async () => {
      const result = await localMplQuery(cfg, dataDir, body);
      for (const w of result.metadata.warnings) process.stderr.write(`warn: ${w}\n`);
      process.stdout.write(renderMplResult(result, format));
    });
    return;
  }
  let answer;
  try {
    answer = await callService<{ series?: MplSeriesOut[]; metadata?: { warnings?: string[] } }>(
      serviceTarget(values, cfg),
      'POST',
      '/v1/query/_mpl',
      body,
    );
  } catch (e) {
    if (e instanceof ServiceCallError) die(e.message);
    throw e;
  }
  const { json } = answer;
  if (!answer.ok) die(`query failed (${answer.status}): ${(json as { message?: string }).message ?? answer.text}`);
  for (const w of json.metadata?.warnings ?? []) process.stderr.write(`warn: ${w}\n`);
  process.stdout.write(renderMplResult(json, format));
}

/** Whether an MPL text gives its source a time range (then no --start is sent); false when it does not parse. */
async function hasOwnRange(text: string): Promise<boolean> {
  const { parseMpl } = await import('../mpl/parser.js');
  try {
    const walk = (q: import('../mpl/ast.js').Query): boolean =>
      q.kind === 'compute' ? walk(q.left) || walk(q.right) : q.source.range !== undefined;
    return walk(parseMpl(text).query);
  } catch {
    return false;
  }
}

/** Runs a command, turning its CommandError into the one-line reason and exit code. */
async function runCommand(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (e) {
    if (e instanceof CommandError) (e.exitCode === 2 ? fail : die)(e.message);
    throw e;
  }
}

/**
 * A command line parseArgs refused, in one line: an unknown option names the closest of the command's
 * own (read from its help text, which lists every one).
 */
function argumentError(err: Error, command: string | undefined): string {
  const first = err.message.split('\n')[0]!;
  const unknown = /^Unknown option '(-{1,2}[^']+)'/.exec(first)?.[1];
  if (unknown) {
    const flags = (command && commandFlags(HELP)[command]) || [];
    const meant = closest(
      unknown.replace(/^-+/, ''),
      flags.map((f) => f.slice(2)),
    );
    return `${command}: unknown option ${unknown}${meant ? `; did you mean --${meant}?` : ''} (try ferry ${command} --help)`;
  }
  return `${first.replace(/\.$/, '')} (try ferry ${command ?? ''} --help)`;
}

/** The config of the command that is starting, to name the right key when it cannot. */
let started: FerryConfig | undefined;
/** What set service.data_dir of `ferry serve` when not its config, for the line a failure to start is. */
let startedDataDirKey: string | undefined;

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command && command in HELP && wantsHelp(command, rest)) return;
  // What the daemon writes (the store, queues, checkpoints, dead letters, the owner token) holds the
  // user's events and secrets: readable by its owner only, as the systemd unit's UMask=0077 also says.
  if (command === 'serve' || command === 'agent' || command === 'pipe') process.umask(0o077);
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'agent':
      return agent(rest);
    case 'validate':
      return validateCommand(rest);
    case 'query':
      return query(rest);
    case 'components': {
      const { values } = parseArgs({
        args: rest,
        options: { markdown: { type: 'boolean', default: false }, section: { type: 'string' } },
        strict: true,
      });
      const { componentsMarkdown, componentsText, sectionMarkdown } = await import('./components.js');
      const section = values.section;
      if (section !== undefined && ((section !== 'agent' && section !== 'service') || !values.markdown))
        fail('--section takes agent or service, with --markdown');
      process.stdout.write(
        section ? sectionMarkdown(section) : values.markdown ? componentsMarkdown() : componentsText(),
      );
      return;
    }
    case 'tap': {
      const { tapCommand } = await import('./tap.js');
      return runCommand(() => tapCommand(rest, loadConfig, (t) => process.stdout.write(t)));
    }
    case 'top': {
      const { topCommand } = await import('./top.js');
      return runCommand(() => topCommand(rest, loadConfig, (t) => process.stdout.write(t)));
    }
    case 'monitors': {
      const { monitorsCommand } = await import('./monitors.js');
      return runCommand(() => monitorsCommand(rest, loadConfig, (t) => process.stdout.write(t)));
    }
    case 'users': {
      const { usersCommand } = await import('./users.js');
      return runCommand(() => usersCommand(rest, loadConfig, (t) => process.stdout.write(t)));
    }
    case 'completion': {
      const { completionScript, SHELLS } = await import('./completion.js');
      const shell = rest[0] as (typeof SHELLS)[number] | undefined;
      if (rest.length !== 1 || !shell || !SHELLS.includes(shell))
        fail(`completion takes one shell: ${SHELLS.join(', ')} (ferry completion bash)`);
      process.stdout.write(completionScript(shell, HELP));
      return;
    }
    case 'health': {
      const { healthCommand } = await import('./health.js');
      process.exitCode = healthCommand(
        rest,
        (t) => process.stdout.write(t),
        (t) => process.stderr.write(t),
      );
      return;
    }
    case 'tokens': {
      const { tokensCommand } = await import('./tokens.js');
      return runCommand(() => tokensCommand(rest, loadConfig, (t) => process.stdout.write(t)));
    }
    case 'pipe': {
      const { pipe, PipeError } = await import('./pipe.js');
      try {
        // Exits at once: after a signal, standard input may still be open and would keep the process alive.
        process.exit(await pipe(rest, loadConfig));
      } catch (e) {
        if (e instanceof PipeError) fail(e.message);
        throw e;
      }
      return;
    }
    case '--version':
    case '-V':
    case '-v':
    case 'version':
      process.stdout.write(`ferry ${version()} (node ${process.version})\n`);
      return;
    case 'help':
      if (rest[0] === 'config') {
        const { configHelp } = await import('./components.js');
        const text = configHelp(rest[1]);
        if (text === undefined) die(`no config key contains "${rest[1]}" (ferry help config lists them all)`);
        process.stdout.write(text);
        return;
      }
      process.stdout.write(rest[0] && HELP[rest[0]] ? HELP[rest[0]]! : USAGE);
      return;
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    case undefined:
      // Nothing asked: the usage on stderr, and a usage error's exit code, as a script would want it.
      process.stderr.write(USAGE);
      process.exit(2);
      return;
    default: {
      const meant = closest(command, Object.keys(HELP));
      fail(`unknown command "${command}"${meant ? `; did you mean ${meant}?` : ''} (try ferry --help)`);
    }
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) fail(err.message);
  const code = (err as { code?: string }).code;
  if (
    code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
    code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ||
    code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL'
  ) {
    fail(argumentError(err as Error, process.argv[2]));
  }
  const explained = explainStartupError(err, started, startedDataDirKey);
  if (explained) die(explained);
  // Not a mistake of the user's: the stack says where it went wrong.
  process.stderr.write(`ferry: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
