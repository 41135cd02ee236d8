/**
 * The agent's part of the config: named sources, transforms and sinks wired by `inputs`, checked beyond
 * what the JSON schema can say (inputs that exist, no cycles, keys that belong to the component's type),
 * with defaults applied. Pure: no I/O. Every error names the key path.
 */
import type { ParserConfig } from '../agent/parsers/index.js';
import { type BatchLimits, DEFAULT_BATCH } from '../agent/pipeline/batcher.js';
import { DEFAULT_SINK_CONCURRENCY } from '../agent/pipeline/delivery.js';
import type { WhenFull } from '../agent/queue/disk-queue.js';
import type { MultilineConfig } from '../agent/transforms/multiline.js';
import { parseBytes, parseDuration } from '../util/units.js';

export class ComponentError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
  }
}

export interface FileSourceConfig {
  name: string;
  type: 'file';
  include: string[];
  exclude: string[];
  startAt: 'beginning' | 'end';
  maxLineBytes: number;
  fingerprintBytes: number;
  pollIntervalMs: number;
  rotateWaitMs: number;
  checkpointIntervalMs: number;
}

export interface StdinSourceConfig {
  name: string;
  type: 'stdin';
  maxLineBytes: number;
}

export type SourceConfig = FileSourceConfig | StdinSourceConfig;

export type TransformConfig = { name: string; inputs: string[] } & (
  | { type: 'parse'; parser: ParserConfig }
  | { type: 'multiline'; multiline: MultilineConfig }
  | { type: 'enrich'; hostField?: string; pathField?: string; fields: Record<string, string | number | boolean> }
);

export interface SinkConfig {
  name: string;
  type: 'axiom' | 'local';
  inputs: string[];
  dataset: string;
  url?: string;
  token?: string;
  compression: 'gzip' | 'zstd' | 'none';
  /** Batches in flight at once (acknowledged in order). */
  concurrency: number;
  timeoutMs: number;
  timestampField?: string;
  timestampFormat?: string;
  labels: Record<string, string>;
  /** Default: <agent data dir>/dead-letter/<sink name>.ndjson */
  deadLetter?: string;
  batch: BatchLimits;
  queue: { maxBytes: number; whenFull: WhenFull };
  retry: { initialMs: number; maxMs: number; maxAttempts: number };
}

export interface AgentConfig {
  dataDir: string;
  api: { enabled: boolean; listen: { host: string; port: number } };
  shutdownTimeoutMs: number;
  sources: SourceConfig[];
  transforms: TransformConfig[];
  sinks: SinkConfig[];
}

type Raw = Record<string, unknown>;

/** Keys that only some types take (the schema allows their union); the rest are common. */
const SOURCE_KEYS: Record<string, string[]> = {
  file: ['include', 'exclude', 'start_at', 'max_line_bytes', 'fingerprint_bytes', 'poll_interval', 'rotate_wait', 'checkpoint_interval'],
  stdin: ['max_line_bytes'],
};
const TRANSFORM_KEYS: Record<string, string[]> = {
  parse: ['parser', 'pattern', 'rfc', 'timezone'],
  multiline: ['preset', 'start', 'continuation', 'timeout', 'max_lines', 'max_bytes'],
  enrich: ['host', 'source_path', 'fields'],
};
const SINK_KEYS: Record<string, string[]> = {
  axiom: ['url', 'token', 'compression', 'timeout', 'retry'],
  local: [],
};
const COMMON_SINK_KEYS = ['type', 'inputs', 'dataset', 'concurrency', 'timestamp_field', 'timestamp_format', 'labels', 'dead_letter', 'batch', 'queue'];

function ms(path: string, v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  try {
    const ns = parseDuration(v as string);
    if (ns < 0n) throw new Error(`negative duration "${v as string}"`);
    return Number(ns / 1_000_000n);
  } catch (e) {
    throw new ComponentError(path, (e as Error).message);
  }
}

function bytes(path: string, v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  try {
    return parseBytes(v as string | number);
  } catch (e) {
    throw new ComponentError(path, (e as Error).message);
  }
}

function checkKeys(path: string, raw: Raw, type: string, byType: Record<string, string[]>, common: string[]): void {
  const allowed = new Set([...common, ...(byType[type] ?? [])]);
  for (const k of Object.keys(raw)) {
    if (!allowed.has(k)) {
      const owners = Object.entries(byType).filter(([, keys]) => keys.includes(k)).map(([t]) => t);
      throw new ComponentError(`${path}.${k}`, `not a key of a ${type} ${path.split('.')[0]!.replace(/s$/, '')}${owners.length ? ` (only of ${owners.join(', ')})` : ''}`);
    }
  }
}

function labelsOf(v: unknown): Record<string, string> {
  return Object.fromEntries(Object.entries((v as Raw | undefined) ?? {}).map(([k, x]) => [k, String(x)]));
}

function regexOk(path: string, pattern: string | undefined): void {
  if (pattern === undefined) return;
  try {
    new RegExp(pattern.replace(/\(\?P</g, '(?<'));
  } catch (e) {
    throw new ComponentError(path, `invalid regular expression: ${(e as Error).message}`);
  }
}

function buildSource(name: string, r: Raw): SourceConfig {
  const path = `sources.${name}`;
  const type = r.type as SourceConfig['type'];
  checkKeys(path, r, type, SOURCE_KEYS, ['type']);
  const maxLineBytes = bytes(`${path}.max_line_bytes`, r.max_line_bytes, 1024 * 1024);
  if (type === 'stdin') return { name, type, maxLineBytes };
  return {
    name, type,
    include: r.include as string[],
    exclude: (r.exclude as string[] | undefined) ?? [],
    startAt: (r.start_at as 'beginning' | 'end' | undefined) ?? 'beginning',
    maxLineBytes,
    fingerprintBytes: (r.fingerprint_bytes as number | undefined) ?? 256,
    pollIntervalMs: ms(`${path}.poll_interval`, r.poll_interval, 250),
    rotateWaitMs: ms(`${path}.rotate_wait`, r.rotate_wait, 5000),
    checkpointIntervalMs: ms(`${path}.checkpoint_interval`, r.checkpoint_interval, 1000),
  };
}

function buildTransform(name: string, r: Raw): TransformConfig {
  const path = `transforms.${name}`;
  const type = r.type as TransformConfig['type'];
  checkKeys(path, r, type, TRANSFORM_KEYS, ['type', 'inputs']);
  const inputs = r.inputs as string[];
  switch (type) {
    case 'parse': {
      const parser = r.parser as ParserConfig['type'];
      if (r.pattern !== undefined && parser !== 'regex') throw new ComponentError(`${path}.pattern`, 'only the regex parser takes a pattern');
      if (r.rfc !== undefined && parser !== 'syslog') throw new ComponentError(`${path}.rfc`, 'only the syslog parser takes rfc');
      if (r.timezone !== undefined && parser !== 'syslog') throw new ComponentError(`${path}.timezone`, 'only the syslog parser takes timezone');
      if (typeof r.timezone === 'string' && r.timezone !== 'local') {
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: r.timezone });
        } catch {
          throw new ComponentError(`${path}.timezone`, `unknown time zone "${r.timezone}" (an IANA name such as Europe/Paris, UTC, or local)`);
        }
      }
      regexOk(`${path}.pattern`, r.pattern as string | undefined);
      const cfg = parser === 'regex' ? { type: parser, pattern: r.pattern as string }
        : parser === 'syslog' ? { type: parser, rfc: r.rfc as '3164' | '5424' | 'auto' | undefined, timezone: r.timezone as string | undefined } : { type: parser };
      return { name, inputs, type, parser: cfg as ParserConfig };
    }
    case 'multiline': {
      const set = ['preset', 'start', 'continuation'].filter((k) => r[k] !== undefined);
      if (set.length !== 1) throw new ComponentError(path, `a multiline transform takes exactly one of preset, start and continuation${set.length ? ` (got ${set.join(', ')})` : ''}`);
      regexOk(`${path}.start`, r.start as string | undefined);
      regexOk(`${path}.continuation`, r.continuation as string | undefined);
      return {
        name, inputs, type,
        multiline: {
          preset: r.preset as MultilineConfig['preset'], start: r.start as string | undefined, continuation: r.continuation as string | undefined,
          timeoutMs: ms(`${path}.timeout`, r.timeout, 1000), maxLines: (r.max_lines as number | undefined) ?? 500,
          maxBytes: bytes(`${path}.max_bytes`, r.max_bytes, 1024 * 1024),
        },
      };
    }
    case 'enrich': {
      const field = (v: unknown, def: string) => (v === true ? def : typeof v === 'string' && v ? v : undefined);
      return {
        name, inputs, type,
        // OpenTelemetry's names: plain `host` would overwrite a field many logs have (the HTTP Host).
        hostField: field(r.host, 'host.name'),
        pathField: field(r.source_path, 'log.file.path'),
        fields: (r.fields as Record<string, string | number | boolean> | undefined) ?? {},
      };
    }
  }
}

/**
 * A token goes into an HTTP header as it is: whitespace or a control character (a token file's trailing
 * newline or `\r`) either cannot be sent or is refused by the receiver, forever. Said at load time instead.
 */
export function tokenProblem(token: string): string | undefined {
  const bad = /[^\x21-\x7e]/.exec(token);
  if (!bad) return undefined;
  const ch = bad[0]!;
  const shown = ch === '\r' ? '\\r' : ch === '\n' ? '\\n' : ch === '\t' ? '\\t' : ch === ' ' ? 'a space' : `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  return `contains ${shown} at character ${bad.index + 1}; a token is printable ASCII without spaces (a trailing newline or \\r from a file or an env file?)`;
}

/** An ingest URL the HTTP client can use: http or https, a host, no query or fragment. */
export function urlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `"${url}" is not a valid URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `"${url}" must start with http:// or https://`;
  if (!u.hostname) return `"${url}" has no host`;
  if (u.search || u.hash) return `"${url}" is the API root (e.g. https://api.axiom.co): no query or fragment`;
  return undefined;
}

function buildSink(name: string, r: Raw): SinkConfig {
  const path = `sinks.${name}`;
  const type = r.type as SinkConfig['type'];
  checkKeys(path, r, type, SINK_KEYS, COMMON_SINK_KEYS);
  if (typeof r.token === 'string') {
    const problem = tokenProblem(r.token);
    if (problem) throw new ComponentError(`${path}.token`, problem);
  }
  if (typeof r.url === 'string') {
    const problem = urlProblem(r.url);
    if (problem) throw new ComponentError(`${path}.url`, problem);
  }
  const b = (r.batch as Raw | undefined) ?? {};
  const q = (r.queue as Raw | undefined) ?? {};
  const rt = (r.retry as Raw | undefined) ?? {};
  return {
    name, type,
    inputs: r.inputs as string[],
    dataset: r.dataset as string,
    url: r.url as string | undefined,
    token: r.token as string | undefined,
    compression: (r.compression as SinkConfig['compression'] | undefined) ?? 'gzip',
    concurrency: (r.concurrency as number | undefined) ?? DEFAULT_SINK_CONCURRENCY,
    timeoutMs: ms(`${path}.timeout`, r.timeout, 60_000),
    timestampField: r.timestamp_field as string | undefined,
    timestampFormat: r.timestamp_format as string | undefined,
    labels: labelsOf(r.labels),
    deadLetter: r.dead_letter as string | undefined,
    batch: {
      maxEvents: (b.max_events as number | undefined) ?? DEFAULT_BATCH.maxEvents,
      maxBytes: bytes(`${path}.batch.max_bytes`, b.max_bytes, DEFAULT_BATCH.maxBytes),
      timeoutMs: ms(`${path}.batch.timeout`, b.timeout, DEFAULT_BATCH.timeoutMs),
    },
    queue: {
      maxBytes: bytes(`${path}.queue.max_bytes`, q.max_bytes, 256 * 1024 * 1024),
      whenFull: (q.when_full as WhenFull | undefined) ?? 'block',
    },
    retry: {
      initialMs: ms(`${path}.retry.initial_backoff`, rt.initial_backoff, 250),
      maxMs: ms(`${path}.retry.max_backoff`, rt.max_backoff, 30_000),
      maxAttempts: (rt.max_attempts as number | undefined) ?? 0,
    },
  };
}

/** Inputs must name sources or transforms; transforms must not feed themselves. */
function checkWiring(sources: SourceConfig[], transforms: TransformConfig[], sinks: SinkConfig[]): void {
  const kinds = new Map<string, string>();
  for (const [kind, list] of [['sources', sources], ['transforms', transforms], ['sinks', sinks]] as const) {
    for (const c of list) {
      const other = kinds.get(c.name);
      if (other) throw new ComponentError(`${kind}.${c.name}`, `the name is already used by ${other}.${c.name}; names must be unique`);
      kinds.set(c.name, kind);
    }
  }
  for (const [kind, list] of [['transforms', transforms], ['sinks', sinks]] as const) {
    for (const c of list) {
      c.inputs.forEach((input, i) => {
        const k = kinds.get(input);
        if (k === undefined) throw new ComponentError(`${kind}.${c.name}.inputs.${i}`, `unknown input "${input}" (inputs name sources or transforms)`);
        if (k === 'sinks') throw new ComponentError(`${kind}.${c.name}.inputs.${i}`, `"${input}" is a sink; inputs name sources or transforms`);
      });
    }
  }
  const byName = new Map(transforms.map((t) => [t.name, t]));
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (t: TransformConfig, trail: string[]) => {
    if (state.get(t.name) === 'done') return;
    if (state.get(t.name) === 'visiting') throw new ComponentError(`transforms.${t.name}.inputs`, `a cycle: ${[...trail, t.name].join(' → ')}`);
    state.set(t.name, 'visiting');
    for (const i of t.inputs) {
      const up = byName.get(i);
      if (up) visit(up, [...trail, t.name]);
    }
    state.set(t.name, 'done');
  };
  for (const t of transforms) visit(t, []);
  if (sources.filter((s) => s.type === 'stdin').length > 1) throw new ComponentError('sources', 'at most one stdin source');
  const fed = new Set([...transforms, ...sinks].flatMap((c) => c.inputs));
  for (const s of sources) if (!fed.has(s.name)) throw new ComponentError(`sources.${s.name}`, 'nothing reads from this source: name it in the inputs of a transform or sink');
}

/** The agent section and the topology, from the validated document. */
export function buildAgentConfig(
  doc: Raw, serviceEnabled: boolean, parseListen: (text: string, path: string) => { host: string; port: number },
): AgentConfig {
  const a = (doc.agent as Raw | undefined) ?? {};
  const api = (a.api as Raw | undefined) ?? {};
  const sources = Object.entries((doc.sources as Record<string, Raw> | undefined) ?? {}).map(([n, r]) => buildSource(n, r));
  const transforms = Object.entries((doc.transforms as Record<string, Raw> | undefined) ?? {}).map(([n, r]) => buildTransform(n, r));
  const sinks = Object.entries((doc.sinks as Record<string, Raw> | undefined) ?? {}).map(([n, r]) => buildSink(n, r));
  checkWiring(sources, transforms, sinks);
  for (const s of sinks) {
    if (s.type === 'local' && !serviceEnabled) {
      throw new ComponentError(`sinks.${s.name}.type`, 'a local sink writes into the embedded service: it needs service.enabled: true');
    }
  }
  return {
    dataDir: (a.data_dir as string | undefined) ?? './data/agent',
    api: { enabled: (api.enabled as boolean | undefined) ?? true, listen: parseListen((api.listen as string | undefined) ?? '127.0.0.1:8078', 'agent.api.listen') },
    shutdownTimeoutMs: ms('agent.shutdown_timeout', a.shutdown_timeout, 10_000),
    sources, transforms, sinks,
  };
}
