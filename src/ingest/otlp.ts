/**
 * OTLP/HTTP bodies (logs and traces, protobuf or JSON) as events with the field names of Axiom's OTel
 * datasets, shared by the service's /v1/logs and /v1/traces and the agent's `otlp` source.
 *
 * The messages are decoded by protobufjs with the OTLP definitions OpenTelemetry generated for its own
 * exporters (`otlp-definitions`, OpenTelemetry's otlp-transformer at a version that ships them): protobuf
 * with `decode`, the OTLP JSON mapping with `fromObject`, after turning the JSON's hex trace and span ids into
 * bytes (protobuf's JSON mapping would read them as base64).
 *
 * A span becomes `{_time, trace_id, span_id, parent_span_id, name, kind, duration, error, status_code,
 * status.message, service.name, scope.name, scope.version, attributes.<key>, resource.<key>, events, links}`
 * with `duration` in nanoseconds; a log record `{_time, body, severity_text, severity_number, trace_id,
 * span_id, service.name, scope.*, attributes.<key>, resource.<key>}`. Attribute keys keep their dots within
 * one object level (`{"attributes": {"http.method": "GET"}}`), which the store names `attributes.http.method`.
 */
import { createRequire } from 'node:module';
import { IngestBodyError, invalidBody } from './errors.js';

/** The protobufjs message types this module uses (the generated definitions carry no TypeScript types). */
interface MessageType {
  decode(bytes: Uint8Array): unknown;
  fromObject(object: object): unknown;
  encode(message: unknown): { finish(): Uint8Array };
}

const definitions = createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js') as {
  opentelemetry: {
    proto: {
      collector: {
        trace: { v1: { ExportTraceServiceRequest: MessageType; ExportTraceServiceResponse: MessageType } };
        logs: { v1: { ExportLogsServiceRequest: MessageType; ExportLogsServiceResponse: MessageType } };
      };
    };
  };
};
const { collector } = definitions.opentelemetry.proto;

/** A 64-bit integer as protobufjs gives it (a Long, or a number). */
type Int64 = number | { toString(): string } | null | undefined;

interface AnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: Int64;
  doubleValue?: number | null;
  arrayValue?: { values?: AnyValue[] | null } | null;
  kvlistValue?: { values?: KeyValue[] | null } | null;
  bytesValue?: Uint8Array | null;
}

interface KeyValue {
  key?: string | null;
  value?: AnyValue | null;
}

interface Scope {
  name?: string | null;
  version?: string | null;
}

interface Resource {
  attributes?: KeyValue[] | null;
}

interface Span {
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  parentSpanId?: Uint8Array | null;
  traceState?: string | null;
  name?: string | null;
  kind?: number | null;
  startTimeUnixNano?: Int64;
  endTimeUnixNano?: Int64;
  attributes?: KeyValue[] | null;
  events?: { timeUnixNano?: Int64; name?: string | null; attributes?: KeyValue[] | null }[] | null;
  links?: { traceId?: Uint8Array | null; spanId?: Uint8Array | null; attributes?: KeyValue[] | null }[] | null;
  status?: { code?: number | null; message?: string | null } | null;
}

interface LogRecord {
  timeUnixNano?: Int64;
  observedTimeUnixNano?: Int64;
  severityNumber?: number | null;
  severityText?: string | null;
  body?: AnyValue | null;
  attributes?: KeyValue[] | null;
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  eventName?: string | null;
}

interface TracesRequest {
  resourceSpans?: {
    resource?: Resource | null;
    scopeSpans?: { scope?: Scope | null; spans?: Span[] | null }[] | null;
  }[];
}

interface LogsRequest {
  resourceLogs?: {
    resource?: Resource | null;
    scopeLogs?: { scope?: Scope | null; logRecords?: LogRecord[] | null }[] | null;
  }[];
}

export type OtlpSignal = 'logs' | 'traces';

/**
 * The largest OTLP body taken once decompressed: protobuf is decoded whole in memory (the OpenTelemetry
 * Collector's receiver takes 20 MiB by default).
 */
export const OTLP_MAX_BYTES = 64 * 1024 * 1024;
export type OtlpEncoding = 'protobuf' | 'json';

/** The encoding of an OTLP/HTTP body from its Content-Type; anything else is a 415. */
export function otlpEncoding(contentType: string | undefined): OtlpEncoding {
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (media === 'application/x-protobuf' || media === 'application/protobuf') return 'protobuf';
  if (media === 'application/json') return 'json';
  throw new IngestBodyError(
    'unsupported',
    `unsupported Content-Type "${media}" for OTLP/HTTP (use application/x-protobuf or application/json)`,
  );
}

const HEX_ID_KEYS = new Set(['traceId', 'spanId', 'parentSpanId']);

/** JSON.parse's reviver: OTLP JSON writes ids in hex, which protobuf's JSON mapping would read as base64. */
function hexIds(key: string, value: unknown): unknown {
  if (!HEX_ID_KEYS.has(key) || typeof value !== 'string') return value;
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(value)) throw new Error(`${key} "${value.slice(0, 40)}" is not hex`);
  return Buffer.from(value, 'hex');
}

/** Decodes a (decompressed) body; a body that does not decode is a 400 naming why. */
function decode(signal: OtlpSignal, body: Buffer, encoding: OtlpEncoding): unknown {
  const type =
    signal === 'traces' ? collector.trace.v1.ExportTraceServiceRequest : collector.logs.v1.ExportLogsServiceRequest;
  try {
    if (encoding === 'protobuf') return type.decode(body);
    const object = JSON.parse(body.length === 0 ? '{}' : body.toString('utf8'), hexIds) as unknown;
    if (!object || typeof object !== 'object' || Array.isArray(object)) throw new Error('expected a JSON object');
    return type.fromObject(object);
  } catch (e) {
    throw invalidBody(
      `invalid OTLP ${signal} ${encoding === 'json' ? 'JSON' : 'protobuf'} body: ${(e as Error).message}`,
    );
  }
}

const hex = (id: Uint8Array | null | undefined) => (id && id.length ? Buffer.from(id).toString('hex') : undefined);

/** Nanoseconds since the epoch as a BigInt (0 when absent). */
function nanos(v: Int64): bigint {
  if (v === null || v === undefined) return 0n;
  return BigInt(typeof v === 'number' ? Math.trunc(v) : v.toString());
}

/** RFC 3339 with nanoseconds, exact. */
function rfc3339(ns: bigint): string {
  const ms = ns / 1_000_000n;
  const iso = new Date(Number(ms)).toISOString(); // …sss Z
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0');
  return `${iso.slice(0, 19)}.${frac}Z`;
}

/** An AnyValue as JSON: integers past 2^53 as their decimal text, bytes as base64, NaN and infinities as null. */
function valueOf(v: AnyValue | null | undefined, depth = 0): unknown {
  if (!v) return null;
  if (v.stringValue !== null && v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== null && v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== null && v.intValue !== undefined) {
    const n = nanos(v.intValue);
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
  }
  if (v.doubleValue !== null && v.doubleValue !== undefined)
    return Number.isFinite(v.doubleValue) ? v.doubleValue : null;
  if (v.bytesValue) return Buffer.from(v.bytesValue).toString('base64');
  // Deeper than the store flattens, a value is kept as its JSON text by the store anyway.
  if (depth > 64) return null;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map((x) => valueOf(x, depth + 1));
  if (v.kvlistValue) return attributes(v.kvlistValue.values, depth + 1);
  return null;
}

/** Key-value pairs as an object without a prototype (`__proto__` is a key like any other); the first of a repeated key wins. */
function attributes(list: KeyValue[] | null | undefined, depth = 0): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const kv of list ?? []) {
    const key = kv.key ?? '';
    if (!Object.hasOwn(out, key)) out[key] = valueOf(kv.value, depth);
  }
  return out;
}

const SPAN_KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const STATUS_CODES = ['UNSET', 'OK', 'ERROR'];

/** The fields every event of a resource and scope carries. */
function common(resource: Resource | null | undefined, scope: Scope | null | undefined): Record<string, unknown> {
  const res = attributes(resource?.attributes);
  const serviceName = res['service.name'];
  return {
    ...(serviceName !== undefined && serviceName !== null ? { 'service.name': serviceName } : {}),
    ...(scope?.name ? { 'scope.name': scope.name } : {}),
    ...(scope?.version ? { 'scope.version': scope.version } : {}),
    ...(Object.keys(res).length ? { resource: res } : {}),
  };
}

function spanEvent(span: Span, shared: Record<string, unknown>): Record<string, unknown> {
  const start = nanos(span.startTimeUnixNano);
  const end = nanos(span.endTimeUnixNano);
  const status = STATUS_CODES[span.status?.code ?? 0] ?? String(span.status?.code);
  const attrs = attributes(span.attributes);
  return {
    _time: rfc3339(start),
    trace_id: hex(span.traceId) ?? '',
    span_id: hex(span.spanId) ?? '',
    parent_span_id: hex(span.parentSpanId) ?? '',
    name: span.name ?? '',
    kind: SPAN_KINDS[span.kind ?? 0] ?? String(span.kind),
    duration: Number(end > start ? end - start : 0n),
    error: status === 'ERROR',
    status_code: status,
    ...(span.status?.message ? { 'status.message': span.status.message } : {}),
    ...shared,
    ...(Object.keys(attrs).length ? { attributes: attrs } : {}),
    events: (span.events ?? []).map((e) => ({
      timestamp: rfc3339(nanos(e.timeUnixNano)),
      name: e.name ?? '',
      attributes: attributes(e.attributes),
    })),
    links: (span.links ?? []).map((l) => ({
      trace_id: hex(l.traceId) ?? '',
      span_id: hex(l.spanId) ?? '',
      attributes: attributes(l.attributes),
    })),
  };
}

function logEvent(r: LogRecord, shared: Record<string, unknown>): Record<string, unknown> {
  const time = nanos(r.timeUnixNano) || nanos(r.observedTimeUnixNano);
  const attrs = attributes(r.attributes);
  const traceId = hex(r.traceId);
  const spanId = hex(r.spanId);
  return {
    // A record without a time takes the receiver's (as an event without _time does).
    ...(time ? { _time: rfc3339(time) } : {}),
    body: valueOf(r.body),
    ...(r.severityText ? { severity_text: r.severityText } : {}),
    ...(r.severityNumber ? { severity_number: r.severityNumber } : {}),
    ...(traceId ? { trace_id: traceId } : {}),
    ...(spanId ? { span_id: spanId } : {}),
    ...(r.eventName ? { event_name: r.eventName } : {}),
    ...shared,
    ...(Object.keys(attrs).length ? { attributes: attrs } : {}),
  };
}

/** A decompressed OTLP/HTTP body as events (their JSON text), one per span or log record. */
export function otlpEvents(signal: OtlpSignal, body: Buffer, encoding: OtlpEncoding): string[] {
  const events: string[] = [];
  if (signal === 'traces') {
    const req = decode('traces', body, encoding) as TracesRequest;
    for (const rs of req.resourceSpans ?? []) {
      for (const ss of rs.scopeSpans ?? []) {
        const shared = common(rs.resource, ss.scope);
        for (const span of ss.spans ?? []) events.push(JSON.stringify(spanEvent(span, shared)));
      }
    }
  } else {
    const req = decode('logs', body, encoding) as LogsRequest;
    for (const rl of req.resourceLogs ?? []) {
      for (const sl of rl.scopeLogs ?? []) {
        const shared = common(rl.resource, sl.scope);
        for (const record of sl.logRecords ?? []) events.push(JSON.stringify(logEvent(record, shared)));
      }
    }
  }
  return events;
}

/**
 * The OTLP/HTTP success answer in the request's encoding: an empty ExportTraceServiceResponse /
 * ExportLogsServiceResponse, or one whose partialSuccess says how many spans or records were refused.
 */
export function otlpSuccess(
  encoding: OtlpEncoding,
  signal: OtlpSignal = 'traces',
  partial?: { rejected: number; message: string },
): { contentType: string; body: Buffer } {
  const rejected = signal === 'traces' ? 'rejectedSpans' : 'rejectedLogRecords';
  const object = partial ? { partialSuccess: { [rejected]: partial.rejected, errorMessage: partial.message } } : {};
  if (encoding === 'json') return { contentType: 'application/json', body: Buffer.from(JSON.stringify(object)) };
  const type =
    signal === 'traces' ? collector.trace.v1.ExportTraceServiceResponse : collector.logs.v1.ExportLogsServiceResponse;
  return { contentType: 'application/x-protobuf', body: Buffer.from(type.encode(type.fromObject(object)).finish()) };
}
