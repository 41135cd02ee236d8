/**
 * The service's part of the config (`service:`): its keys, each declared once (schema, default,
 * documentation, reader), and its settings after defaults and unit parsing. Pure: no I/O. Every error
 * names the key path.
 */
import { ConfigError, readSection } from '../config/document.js';
import {
  bool,
  bytes,
  duration,
  group,
  int,
  listen,
  objectSchema,
  oneOf,
  optionalGroup,
  readOptions,
  str,
  strings,
  url,
  type JsonSchema,
  type OptionSpecs,
} from '../config/options.js';
import { QUERY_LIMIT_OPTIONS, queryLimitsOf, type QueryLimits } from './query/limits.js';
import { jsBudgetOf, type JsBudget } from './query/js-budget.js';
import { datasetNameProblem } from './store/dataset-name.js';
import { cidrProblem } from './notifiers/address-policy.js';

/** The service section after defaults and unit parsing. */
export interface ServiceConfig {
  enabled: boolean;
  listen: { host: string; port: number };
  dataDir: string;
  memoryLimitBytes: number;
  checkpointThresholdBytes: number;
  threads: number;
  maxBodyBytes: number;
  maxDecompressedBytes: number;
  maxFieldsPerDataset: number;
  /** A query running longer is interrupted and answered 408. */
  queryTimeoutMs: number;
  /** Bounds on one query, each refused with a 400 naming its key. */
  queryLimits: QueryLimits;
  /** What a JavaScript function inside a query may do per value and per batch of rows. */
  jsBudget: JsBudget;
  retention: { defaultDays: number; checkIntervalMs: number };
  monitors: MonitorsConfig;
  notifiers: NotifiersConfig;
}

export interface MonitorsConfig {
  /** Whether the scheduler runs monitors (the API answers either way). */
  enabled: boolean;
  /** Monitor queries running at once. */
  concurrency: number;
  /** The dataset each run is recorded in. */
  runsDataset: string;
}

export interface NotifiersConfig {
  /** One HTTP request or SMTP session may take this long. */
  timeoutMs: number;
  /** Tries per notification, the first included. */
  attempts: number;
  urls: { pagerduty: string; opsgenie: string; opsgenie_eu: string; discord: string };
  /** CIDRs a receiver must be in, when any (service.notifiers.allow_networks). */
  allowNetworks: string[];
  /** CIDRs a receiver may not be in (service.notifiers.deny_networks). */
  denyNetworks: string[];
  smtp?: {
    host: string;
    port: number;
    secure: boolean;
    starttls: 'required' | 'opportunistic' | 'off';
    user?: string;
    password?: string;
    from: string;
  };
}

/** memory_limit a dataset needs per field: what an insert pins per column, and as much for the rest (see buildServiceConfig). */
const FIELD_MEMORY_BYTES = 1024 * 1024;

const cidrList = () => strings([]).check((v) => cidrProblem(v));

export const SERVICE_OPTIONS = {
  enabled: bool(true).doc('run the embedded service'),
  listen: listen('127.0.0.1:8077').doc('`host:port`'),
  data_dir: str('./data').doc('where the database (`ferry.duckdb`), temp files and `admin-token` live'),
  memory_limit: bytes('512MiB').doc('DuckDB memory limit (`512MB`, `1GiB`)'),
  checkpoint_threshold: bytes('256MiB').doc(
    'WAL size at which it is folded into the compressed file, at a moment no query runs: it waits up to query_timeout (60 s where that is 0) for one, then holds new queries back until the running ones end (a query counts that wait in its time); ingest does not wait for it',
  ),
  // One DuckDB worker: requests already run in parallel on their own connections, and on 2 cores extra
  // DuckDB workers cost more in contention than they give (docs/benchmarks.md).
  threads: int(1, { min: 1 }).doc(
    'DuckDB worker threads per query (concurrent requests run in parallel anyway; on 2 cores more workers slowed ingest by a third)',
  ),
  max_body_bytes: bytes('100MiB').doc('largest ingest body on the wire (413 above)'),
  max_decompressed_bytes: bytes('1GiB').doc('largest ingest body once decompressed (413 above)'),
  max_fields_per_dataset: int(undefined, { min: 1 })
    .doc(
      'a batch that would add more fields is refused (400); a dataset needs 1 MiB of `memory_limit` per field (an insert pins half a MiB per column, and its own work needs the rest), so the value may not exceed `memory_limit` / 1 MiB (refused at start, naming both keys)',
    )
    .shown('2048, or what `memory_limit` allows (512 at 512MiB)'),
  query_timeout: duration('60s').doc(
    'a query running longer is interrupted and answered 408 (Go duration; `0` = no limit); it also bounds how long a shutdown waits for a query inside a JavaScript function such as `series_fir`',
  ),
  query_limits: group(QUERY_LIMIT_OPTIONS),
  retention: group({
    default_days: int(0, { min: 0 }).doc('retention of datasets without their own (`0` = forever)'),
    check_interval: duration('1h').doc('how often retention runs (Go duration)'),
  }),
  monitors: group({
    enabled: bool(true).doc('run monitors on their schedule (the API works either way)'),
    concurrency: int(1, { min: 1, max: 64 }).doc('monitor queries running at once'),
    runs_dataset: str('ferry-monitor-runs')
      .doc('the dataset every monitor run is recorded in')
      .check((v) => datasetNameProblem(v)),
  }),
  notifiers: group({
    timeout: duration('10s').doc('one notification request or SMTP session may take this long'),
    attempts: int(5, { min: 1, max: 20 }).doc(
      "tries per notification while failures may pass (network, 408, 429, 5xx), with exponential backoff and full jitter from 1 s (or the receiver's `Retry-After`)",
    ),
    pagerduty_url: url('https://events.pagerduty.com').doc(
      'base URL of PagerDuty, for proxies, air-gapped hosts and tests',
    ),
    opsgenie_url: url('https://api.opsgenie.com').doc('base URL of Opsgenie'),
    opsgenie_eu_url: url('https://api.eu.opsgenie.com').doc("base URL of Opsgenie's EU region"),
    discord_url: url('https://discord.com').doc('base URL of Discord'),
    allow_networks: cidrList()
      .doc("CIDRs (`10.0.0.0/8`, `fd00::/8`) a notifier's receiver must be in, when set (see Monitors and notifiers)")
      .shown('any'),
    deny_networks: cidrList()
      .doc("CIDRs a notifier's receiver may not be in (link-local and metadata addresses are refused always)")
      .shown('none'),
    smtp: optionalGroup({
      host: str().required().doc('the SMTP server'),
      port: int(undefined, { min: 1, max: 65535 }).doc('its port').shown('`587`, or `465` with `secure`'),
      secure: bool(false).doc('TLS from the first byte (port 465)'),
      starttls: oneOf(['required', 'opportunistic', 'off'], 'opportunistic').doc(
        'upgrade a plain connection with STARTTLS: always, when offered, or never',
      ),
      user: str(undefined, { minLength: 0 }).doc('login').shown('none'),
      password: str(undefined, { minLength: 0 }).doc('password').shown('none'),
      from: str(undefined, { minLength: 3 }).required().doc('the sender address'),
    }).doc(
      'the server e-mail notifiers send through; without it their mail waits in the outbox (`<data_dir>/outbox/mail.ndjson`) and is sent once it is set. SIGHUP reads it again (`ferry agent` and `ferry serve -c FILE`), the one service key that changes without a restart',
    ),
  }),
} satisfies OptionSpecs;

export const serviceSchema: JsonSchema = objectSchema(SERVICE_OPTIONS);

/** The service section of a validated document. */
export function buildServiceConfig(section: unknown): ServiceConfig {
  const s = readSection(() => readOptions(SERVICE_OPTIONS, section, 'service'));
  // An insert pins about half a MiB per column of the table (DuckDB blocks of 256 KiB, data and validity),
  // and the batch's own work needs room beside them (docs/benchmarks.md): a dataset may only get as wide
  // as half the memory limit can write.
  const widest = Math.max(1, Math.floor(s.memory_limit / FIELD_MEMORY_BYTES));
  const asked = s.max_fields_per_dataset;
  if (asked !== undefined && asked > widest) {
    throw new ConfigError(
      `invalid config:\n  service.max_fields_per_dataset: ${asked} fields cannot be written with service.memory_limit ` +
        `${Math.round(s.memory_limit / 1048576)}MiB (at most ${widest}: 1 MiB per field); raise memory_limit or lower max_fields_per_dataset`,
      'service.max_fields_per_dataset',
    );
  }
  const n = s.notifiers;
  return {
    enabled: s.enabled,
    listen: s.listen,
    dataDir: s.data_dir,
    memoryLimitBytes: s.memory_limit,
    checkpointThresholdBytes: s.checkpoint_threshold,
    threads: s.threads,
    maxBodyBytes: s.max_body_bytes,
    maxDecompressedBytes: s.max_decompressed_bytes,
    maxFieldsPerDataset: asked ?? Math.min(2048, widest),
    queryTimeoutMs: s.query_timeout,
    queryLimits: queryLimitsOf(s.query_limits),
    jsBudget: jsBudgetOf(s.query_limits),
    monitors: {
      enabled: s.monitors.enabled,
      concurrency: s.monitors.concurrency,
      runsDataset: s.monitors.runs_dataset,
    },
    notifiers: {
      timeoutMs: n.timeout,
      attempts: n.attempts,
      urls: {
        pagerduty: new URL(n.pagerduty_url).toString(),
        opsgenie: new URL(n.opsgenie_url).toString(),
        opsgenie_eu: new URL(n.opsgenie_eu_url).toString(),
        discord: new URL(n.discord_url).toString(),
      },
      allowNetworks: n.allow_networks,
      denyNetworks: n.deny_networks,
      smtp: n.smtp && {
        host: n.smtp.host,
        port: n.smtp.port ?? (n.smtp.secure ? 465 : 587),
        secure: n.smtp.secure,
        starttls: n.smtp.starttls,
        user: n.smtp.user,
        password: n.smtp.password,
        from: n.smtp.from,
      },
    },
    retention: { defaultDays: s.retention.default_days, checkIntervalMs: s.retention.check_interval },
  };
}
