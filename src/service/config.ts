/**
 * The service's part of the config (`service:`): its schema, and its settings after defaults and unit
 * parsing. Pure: no I/O. Every error names the key path.
 */
import { ConfigError, parseListen } from '../config/document.js';
import type { JsonSchema } from '../config/options.js';
import { DEFAULT_QUERY_LIMITS, MAX_EXPRESSION_DEPTH, type QueryLimits } from './query/limits.js';
import { DEFAULT_JS_BUDGET, type JsBudget } from './query/js-budget.js';
import { datasetNameProblem } from './store/dataset-name.js';
import { cidrProblem } from './notifiers/address-policy.js';
import { parseBytes, parseDuration } from '../util/units.js';

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

export const serviceSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    listen: { type: 'string', pattern: '^.+:\\d+$' },
    data_dir: { type: 'string', minLength: 1 },
    memory_limit: { type: ['string', 'integer'] },
    checkpoint_threshold: { type: ['string', 'integer'] },
    threads: { type: 'integer', minimum: 1 },
    max_body_bytes: { type: ['string', 'integer'] },
    max_decompressed_bytes: { type: ['string', 'integer'] },
    max_fields_per_dataset: { type: 'integer', minimum: 1 },
    query_timeout: { type: 'string' },
    query_limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_query_bytes: { type: ['string', 'integer'] },
        max_stages: { type: 'integer', minimum: 1 },
        max_columns: { type: 'integer', minimum: 1 },
        max_expression_depth: { type: 'integer', minimum: 1, maximum: MAX_EXPRESSION_DEPTH },
        max_expression_terms: { type: 'integer', minimum: 1 },
        max_result_bytes: { type: ['string', 'integer'] },
        max_js_value_bytes: { type: ['string', 'integer'] },
        max_js_chunk_bytes: { type: ['string', 'integer'] },
        max_js_chunk_time: { type: 'string' },
      },
    },
    retention: {
      type: 'object',
      additionalProperties: false,
      properties: {
        default_days: { type: 'integer', minimum: 0 },
        check_interval: { type: 'string' },
      },
    },
    monitors: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        concurrency: { type: 'integer', minimum: 1, maximum: 64 },
        runs_dataset: { type: 'string', minLength: 1 },
      },
    },
    notifiers: {
      type: 'object',
      additionalProperties: false,
      properties: {
        timeout: { type: 'string' },
        attempts: { type: 'integer', minimum: 1, maximum: 20 },
        pagerduty_url: { type: 'string', minLength: 1 },
        opsgenie_url: { type: 'string', minLength: 1 },
        opsgenie_eu_url: { type: 'string', minLength: 1 },
        discord_url: { type: 'string', minLength: 1 },
        allow_networks: { type: 'array', items: { type: 'string' } },
        deny_networks: { type: 'array', items: { type: 'string' } },
        smtp: {
          type: 'object',
          additionalProperties: false,
          required: ['host', 'from'],
          properties: {
            host: { type: 'string', minLength: 1 },
            port: { type: 'integer', minimum: 1, maximum: 65535 },
            secure: { type: 'boolean' },
            starttls: { enum: ['required', 'opportunistic', 'off'] },
            user: { type: 'string' },
            password: { type: 'string' },
            from: { type: 'string', minLength: 3 },
          },
        },
      },
    },
  },
};

/** A list of CIDRs (10.0.0.0/8, fd00::/8), each checked; a bad one names the key. */
function cidrs(path: string, raw: string[] | undefined): string[] {
  const list = raw ?? [];
  const problem = cidrProblem(list, path);
  if (problem) throw new ConfigError(problem, path);
  return list;
}

function withUnit<T>(path: string, raw: unknown, parse: (v: never) => T, fallback: T): T {
  if (raw === undefined) return fallback;
  try {
    return parse(raw as never);
  } catch (e) {
    throw new ConfigError(`${path}: ${(e as Error).message}`, path);
  }
}

function baseUrl(path: string, v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ConfigError(`${path}: "${v}" is not a URL`, path);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new ConfigError(`${path}: "${v}" is not an http or https URL`, path);
  return u.toString();
}

function datasetName(path: string, v: string): string {
  const problem = datasetNameProblem(v);
  if (problem) throw new ConfigError(`${path}: ${problem}`, path);
  return v;
}

type RawService = Record<string, unknown> & {
  retention?: { default_days?: number; check_interval?: string };
  query_limits?: {
    max_query_bytes?: string | number;
    max_stages?: number;
    max_columns?: number;
    max_expression_depth?: number;
    max_expression_terms?: number;
    max_result_bytes?: string | number;
    max_js_value_bytes?: string | number;
    max_js_chunk_bytes?: string | number;
    max_js_chunk_time?: string;
  };
  monitors?: { enabled?: boolean; concurrency?: number; runs_dataset?: string };
  notifiers?: {
    timeout?: string;
    attempts?: number;
    pagerduty_url?: string;
    opsgenie_url?: string;
    opsgenie_eu_url?: string;
    discord_url?: string;
    allow_networks?: string[];
    deny_networks?: string[];
    smtp?: {
      host: string;
      port?: number;
      secure?: boolean;
      starttls?: 'required' | 'opportunistic' | 'off';
      user?: string;
      password?: string;
      from: string;
    };
  };
};

/** The service section of a validated document. */
export function buildServiceConfig(section: unknown): ServiceConfig {
  const s = (section ?? {}) as RawService;
  const memoryLimitBytes = withUnit('service.memory_limit', s.memory_limit, parseBytes, 512 * 1024 * 1024);
  // An insert pins about half a MiB per column of the table (DuckDB blocks of 256 KiB, data and validity),
  // and the batch's own work needs room beside them (docs/benchmarks.md): a dataset may only get as wide
  // as half the memory limit can write.
  const widest = Math.max(1, Math.floor(memoryLimitBytes / FIELD_MEMORY_BYTES));
  const asked = s.max_fields_per_dataset as number | undefined;
  if (asked !== undefined && asked > widest) {
    throw new ConfigError(
      `invalid config:\n  service.max_fields_per_dataset: ${asked} fields cannot be written with service.memory_limit ` +
        `${Math.round(memoryLimitBytes / 1048576)}MiB (at most ${widest}: 1 MiB per field); raise memory_limit or lower max_fields_per_dataset`,
      'service.max_fields_per_dataset',
    );
  }
  return {
    enabled: (s.enabled as boolean | undefined) ?? true,
    listen: parseListen((s.listen as string | undefined) ?? '127.0.0.1:8077', 'service.listen'),
    dataDir: (s.data_dir as string | undefined) ?? './data',
    memoryLimitBytes,
    checkpointThresholdBytes: withUnit(
      'service.checkpoint_threshold',
      s.checkpoint_threshold,
      parseBytes,
      256 * 1024 * 1024,
    ),
    // One DuckDB worker: requests already run in parallel on their own connections, and on 2 cores extra
    // DuckDB workers cost more in contention than they give (docs/benchmarks.md).
    threads: (s.threads as number | undefined) ?? 1,
    maxBodyBytes: withUnit('service.max_body_bytes', s.max_body_bytes, parseBytes, 100 * 1024 * 1024),
    maxDecompressedBytes: withUnit(
      'service.max_decompressed_bytes',
      s.max_decompressed_bytes,
      parseBytes,
      1024 * 1024 * 1024,
    ),
    maxFieldsPerDataset: asked ?? Math.min(2048, widest),
    queryTimeoutMs: withUnit(
      'service.query_timeout',
      s.query_timeout as string | undefined,
      (v: string) => Number(parseDuration(v) / 1_000_000n),
      60_000,
    ),
    queryLimits: {
      maxQueryBytes: withUnit(
        'service.query_limits.max_query_bytes',
        s.query_limits?.max_query_bytes,
        parseBytes,
        DEFAULT_QUERY_LIMITS.maxQueryBytes,
      ),
      maxStages: s.query_limits?.max_stages ?? DEFAULT_QUERY_LIMITS.maxStages,
      maxColumns: s.query_limits?.max_columns ?? DEFAULT_QUERY_LIMITS.maxColumns,
      maxExpressionDepth: s.query_limits?.max_expression_depth ?? DEFAULT_QUERY_LIMITS.maxExpressionDepth,
      maxExpressionTerms: s.query_limits?.max_expression_terms ?? DEFAULT_QUERY_LIMITS.maxExpressionTerms,
      maxResultBytes: withUnit(
        'service.query_limits.max_result_bytes',
        s.query_limits?.max_result_bytes,
        parseBytes,
        DEFAULT_QUERY_LIMITS.maxResultBytes,
      ),
    },
    jsBudget: {
      valueChars: withUnit(
        'service.query_limits.max_js_value_bytes',
        s.query_limits?.max_js_value_bytes,
        parseBytes,
        DEFAULT_JS_BUDGET.valueChars,
      ),
      chunkChars: withUnit(
        'service.query_limits.max_js_chunk_bytes',
        s.query_limits?.max_js_chunk_bytes,
        parseBytes,
        DEFAULT_JS_BUDGET.chunkChars,
      ),
      chunkMs: withUnit(
        'service.query_limits.max_js_chunk_time',
        s.query_limits?.max_js_chunk_time,
        (v: string) => Math.max(1, Number(parseDuration(v) / 1_000_000n)),
        DEFAULT_JS_BUDGET.chunkMs,
      ),
    },
    monitors: {
      enabled: s.monitors?.enabled ?? true,
      concurrency: s.monitors?.concurrency ?? 1,
      runsDataset: datasetName('service.monitors.runs_dataset', s.monitors?.runs_dataset ?? 'ferry-monitor-runs'),
    },
    notifiers: {
      timeoutMs: withUnit(
        'service.notifiers.timeout',
        s.notifiers?.timeout,
        (v: string) => Number(parseDuration(v) / 1_000_000n),
        10_000,
      ),
      attempts: s.notifiers?.attempts ?? 5,
      urls: {
        pagerduty: baseUrl(
          'service.notifiers.pagerduty_url',
          s.notifiers?.pagerduty_url ?? 'https://events.pagerduty.com',
        ),
        opsgenie: baseUrl('service.notifiers.opsgenie_url', s.notifiers?.opsgenie_url ?? 'https://api.opsgenie.com'),
        opsgenie_eu: baseUrl(
          'service.notifiers.opsgenie_eu_url',
          s.notifiers?.opsgenie_eu_url ?? 'https://api.eu.opsgenie.com',
        ),
        discord: baseUrl('service.notifiers.discord_url', s.notifiers?.discord_url ?? 'https://discord.com'),
      },
      allowNetworks: cidrs('service.notifiers.allow_networks', s.notifiers?.allow_networks),
      denyNetworks: cidrs('service.notifiers.deny_networks', s.notifiers?.deny_networks),
      smtp: s.notifiers?.smtp && {
        host: s.notifiers.smtp.host,
        port: s.notifiers.smtp.port ?? (s.notifiers.smtp.secure ? 465 : 587),
        secure: s.notifiers.smtp.secure ?? false,
        starttls: s.notifiers.smtp.starttls ?? 'opportunistic',
        user: s.notifiers.smtp.user,
        password: s.notifiers.smtp.password,
        from: s.notifiers.smtp.from,
      },
    },
    retention: {
      defaultDays: s.retention?.default_days ?? 0,
      checkIntervalMs: withUnit(
        'service.retention.check_interval',
        s.retention?.check_interval,
        (v: string) => Number(parseDuration(v) / 1_000_000n),
        3_600_000,
      ),
    },
  };
}
