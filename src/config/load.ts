import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { type AgentConfig, buildAgentConfig, ComponentError } from './agent.js';
import { configSchema } from './schema.js';
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from '../service/query/limits.js';
import { parseBytes, parseDuration } from '../util/units.js';
import { datasetNameProblem } from '../service/store/dataset-name.js';

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
  smtp?: { host: string; port: number; secure: boolean; starttls: 'required' | 'opportunistic' | 'off'; user?: string; password?: string; from: string };
}

export interface FerryConfig {
  logLevel: string;
  service: ServiceConfig;
  agent: AgentConfig;
}

/** memory_limit a dataset needs per field: what an insert pins per column, and as much for the rest (see buildConfig). */
const FIELD_MEMORY_BYTES = 1024 * 1024;

export class ConfigError extends Error {
  constructor(message: string, readonly path: string = '') {
    super(message);
    this.name = 'ConfigError';
  }
}

const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(configSchema);

/** "/service/listen" → "service.listen"; array indices stay numeric ("sources.0.path"). */
function keyPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra) parts.push(extra);
  return parts.join('.') || '(root)';
}

function describe(err: ErrorObject): string {
  if (err.keyword === 'additionalProperties') {
    const key = (err.params as { additionalProperty: string }).additionalProperty;
    return `${keyPath(err.instancePath, key)}: unknown key`;
  }
  return `${keyPath(err.instancePath)}: ${err.message ?? 'invalid'}`;
}

/**
 * Replaces ${VAR} and ${VAR:-default} in every string value (not in keys, and after YAML parsing,
 * so a variable's content can never change the document's structure).
 */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, path = ''): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, def?: string) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (def !== undefined) return def;
      throw new ConfigError(`${path || '(root)'}: environment variable ${name} is not set and has no default`, path);
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, path ? `${path}.${i}` : String(i)));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, env, path ? `${path}.${k}` : k);
    return out;
  }
  return value;
}

export function parseListen(text: string, path = 'service.listen'): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(text.trim());
  if (!m) throw new ConfigError(`${path}: expected host:port, got "${text}"`, path);
  const port = Number(m[2]);
  if (port > 65535) throw new ConfigError(`${path}: port ${port} out of range`, path);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
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
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(`${path}: "${v}" is not an http or https URL`, path);
  return u.toString();
}

function datasetName(path: string, v: string): string {
  const problem = datasetNameProblem(v);
  if (problem) throw new ConfigError(`${path}: ${problem}`, path);
  return v;
}

/** Validates a parsed document and applies defaults. Pure: no I/O. */
export function buildConfig(doc: unknown, env: NodeJS.ProcessEnv = process.env): FerryConfig {
  const raw = interpolate(doc ?? {}, env);
  if (!validate(raw)) {
    // An if/then failure is also reported by the keyword that failed inside `then`: say that one only.
    const msgs = [...new Set((validate.errors ?? []).filter((e) => e.keyword !== 'if').map(describe))];
    throw new ConfigError(`invalid config:\n  ${msgs.join('\n  ')}`, keyPath(validate.errors?.[0]?.instancePath ?? ''));
  }
  const r = raw as {
    log?: { level?: string };
    service?: Record<string, unknown> & {
      retention?: { default_days?: number; check_interval?: string };
      query_limits?: { max_query_bytes?: string | number; max_stages?: number; max_columns?: number; max_expression_depth?: number };
      monitors?: { enabled?: boolean; concurrency?: number; runs_dataset?: string };
      notifiers?: {
        timeout?: string; attempts?: number; pagerduty_url?: string; opsgenie_url?: string; opsgenie_eu_url?: string; discord_url?: string;
        smtp?: { host: string; port?: number; secure?: boolean; starttls?: 'required' | 'opportunistic' | 'off'; user?: string; password?: string; from: string };
      };
    };
  };
  const s = r.service ?? {};
  const memoryLimitBytes = withUnit('service.memory_limit', s.memory_limit, parseBytes, 512 * 1024 * 1024);
  // An insert pins about half a MiB per column of the table (DuckDB blocks of 256 KiB, data and validity):
  // with 512 MiB a commit into a table of ~1,050 columns failed, and at ~920 columns the batch's own work
  // no longer fitted beside them. A dataset may only get as wide as half the memory limit can write.
  const widest = Math.max(1, Math.floor(memoryLimitBytes / FIELD_MEMORY_BYTES));
  const asked = s.max_fields_per_dataset as number | undefined;
  if (asked !== undefined && asked > widest) {
    throw new ConfigError(`invalid config:\n  service.max_fields_per_dataset: ${asked} fields cannot be written with service.memory_limit ` +
      `${Math.round(memoryLimitBytes / 1048576)}MiB (at most ${widest}: 1 MiB per field); raise memory_limit or lower max_fields_per_dataset`, 'service.max_fields_per_dataset');
  }
  const service: ServiceConfig = {
    enabled: (s.enabled as boolean | undefined) ?? true,
    listen: parseListen((s.listen as string | undefined) ?? '127.0.0.1:8077'),
    dataDir: (s.data_dir as string | undefined) ?? './data',
    memoryLimitBytes,
    checkpointThresholdBytes: withUnit('service.checkpoint_threshold', s.checkpoint_threshold, parseBytes, 256 * 1024 * 1024),
    // One DuckDB worker: requests already run in parallel on their own connections, and on 2 cores extra
    // DuckDB workers cost more in contention than they give (bench:ingest: 87k → 136k events/s).
    threads: (s.threads as number | undefined) ?? 1,
    maxBodyBytes: withUnit('service.max_body_bytes', s.max_body_bytes, parseBytes, 100 * 1024 * 1024),
    maxDecompressedBytes: withUnit('service.max_decompressed_bytes', s.max_decompressed_bytes, parseBytes, 1024 * 1024 * 1024),
    maxFieldsPerDataset: asked ?? Math.min(2048, widest),
    queryTimeoutMs: withUnit('service.query_timeout', s.query_timeout as string | undefined,
      (v: string) => Number(parseDuration(v) / 1_000_000n), 60_000),
    queryLimits: {
      maxQueryBytes: withUnit('service.query_limits.max_query_bytes', s.query_limits?.max_query_bytes, parseBytes, DEFAULT_QUERY_LIMITS.maxQueryBytes),
      maxStages: s.query_limits?.max_stages ?? DEFAULT_QUERY_LIMITS.maxStages,
      maxColumns: s.query_limits?.max_columns ?? DEFAULT_QUERY_LIMITS.maxColumns,
      maxExpressionDepth: s.query_limits?.max_expression_depth ?? DEFAULT_QUERY_LIMITS.maxExpressionDepth,
    },
    monitors: {
      enabled: s.monitors?.enabled ?? true,
      concurrency: s.monitors?.concurrency ?? 1,
      runsDataset: datasetName('service.monitors.runs_dataset', s.monitors?.runs_dataset ?? 'ferry-monitor-runs'),
    },
    notifiers: {
      timeoutMs: withUnit('service.notifiers.timeout', s.notifiers?.timeout, (v: string) => Number(parseDuration(v) / 1_000_000n), 10_000),
      attempts: s.notifiers?.attempts ?? 5,
      urls: {
        pagerduty: baseUrl('service.notifiers.pagerduty_url', s.notifiers?.pagerduty_url ?? 'https://events.pagerduty.com'),
        opsgenie: baseUrl('service.notifiers.opsgenie_url', s.notifiers?.opsgenie_url ?? 'https://api.opsgenie.com'),
        opsgenie_eu: baseUrl('service.notifiers.opsgenie_eu_url', s.notifiers?.opsgenie_eu_url ?? 'https://api.eu.opsgenie.com'),
        discord: baseUrl('service.notifiers.discord_url', s.notifiers?.discord_url ?? 'https://discord.com'),
      },
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
      checkIntervalMs: withUnit('service.retention.check_interval', s.retention?.check_interval,
        (v: string) => Number(parseDuration(v) / 1_000_000n), 3_600_000),
    },
  };
  let agent: AgentConfig;
  try {
    agent = buildAgentConfig(raw as Record<string, unknown>, service.enabled, parseListen);
  } catch (e) {
    if (e instanceof ComponentError) throw new ConfigError(`invalid config:\n  ${e.message}`, e.path);
    throw e;
  }
  return { logLevel: r.log?.level ?? 'info', service, agent };
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): FerryConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`cannot read config ${file}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`${file}: YAML syntax error: ${(e as Error).message}`);
  }
  try {
    return buildConfig(doc, env);
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`${file}: ${e.message}`, e.path);
    throw e;
  }
}
