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
import { MAX_EVENT_BYTES } from './events.js';

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

/**
 * JSON.parse's reviver: OTLP JSON writes ids in hex, which protobuf's JSON mapping would read as base64.
 * Bytes given as anything but a string are refused: protobufjs would take any object with a `length`.
 */
function hexIds(key: string, value: unknown): unknown {
  if (key === 'bytesValue' && typeof value !== 'string') throw new Error('bytesValue must be a base64 string');
  if (!HEX_ID_KEYS.has(key)) return value;
  if (typeof value !== 'string') throw new Error(`${key} must be a hex string`);
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

/** An id in hex (undefined when empty); one of another length than OTLP's (16 or 8 bytes) refuses the body. */
function hex(id: Uint8Array | null | undefined, bytes: 16 | 8, what: string): string | undefined {
  if (!id || id.length === 0) return undefined;
  if (id.length !== bytes) throw invalidBody(`a ${what} of ${id.length} bytes (OTLP's are ${bytes})`);
  return Buffer.from(id).toString('hex');
}

/** The latest time taken: TIMESTAMP_NS ends in 2262. */
const MAX_NANOS = 2n ** 63n - 1n;

/**
 * Nanoseconds since the epoch as a BigInt, 0 when absent. fixed64 is unsigned: protobufjs may hand it as a
 * negative Long. A time past 2262 refuses the body.
 */
function nanos(v: Int64, what = 'time'): bigint {
  if (v === null || v === undefined) return 0n;
  let n = BigInt(typeof v === 'number' ? Math.trunc(v) : v.toString());
  if (n < 0n) n += 2n ** 64n;
  if (n > MAX_NANOS) throw invalidBody(`a ${what} of ${n} ns since 1970 is past 2262`);
  return n;
}

/** An int64 attribute value: its text when a number cannot hold it exactly (also past int64, as sent). */
function integer(v: Int64): number | string {
  if (v === null || v === undefined) return 0;
  const text = typeof v === 'number' ? String(Math.trunc(v)) : v.toString();
  const n = BigInt(text);
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : text;
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
  if (v.intValue !== null && v.intValue !== undefined) return integer(v.intValue);
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

/**
 * The fields every event of a resource and scope carries, as JSON members (`"service.name":"cart",…`, or
 * '' when none): written once and appended to each event's text, not copied into each event's object.
 */
function shared(resource: Resource | null | undefined, scope: Scope | null | undefined): string {
  const res = attributes(resource?.attributes);
  const serviceName = res['service.name'];
  const text = JSON.stringify({
    ...(serviceName !== undefined && serviceName !== null ? { 'service.name': serviceName } : {}),
    ...(scope?.name ? { 'scope.name': scope.name } : {}),
    ...(scope?.version ? { 'scope.version': scope.version } : {}),
    ...(Object.keys(res).length ? { resource: res } : {}),
  });
  return text.slice(1, -1);
}

/** An event's own fields as JSON text, with the shared members appended. */
function withShared(own: Record<string, unknown>, sharedText: string): string {
  const text = JSON.stringify(own);
  return sharedText === '' ? text : `${text.slice(0, -1)},${sharedText}}`;
}

/** The longest span taken as a number of nanoseconds exactly (104 days); longer ones are cut to it. */
const MAX_DURATION = BigInt(Number.MAX_SAFE_INTEGER);

function spanEvent(span: Span): Record<string, unknown> {
  const start = nanos(span.startTimeUnixNano, 'span start');
  const end = nanos(span.endTimeUnixNano, 'span end');
  const status = STATUS_CODES[span.status?.code ?? 0] ?? String(span.status?.code);
  const attrs = attributes(span.attributes);
  const took = end > start ? end - start : 0n;
  return {
    // A span without a start takes the receiver's time (as an event without _time does).
    ...(start ? { _time: rfc3339(start) } : {}),
    trace_id: hex(span.traceId, 16, 'trace id') ?? '',
    span_id: hex(span.spanId, 8, 'span id') ?? '',
    parent_span_id: hex(span.parentSpanId, 8, 'parent span id') ?? '',
    name: span.name ?? '',
    kind: SPAN_KINDS[span.kind ?? 0] ?? String(span.kind),
    duration: Number(took > MAX_DURATION ? MAX_DURATION : took),
    error: status === 'ERROR',
    status_code: status,
    ...(span.status?.message ? { 'status.message': span.status.message } : {}),
    ...(Object.keys(attrs).length ? { attributes: attrs } : {}),
    events: (span.events ?? []).map((e) => ({
      timestamp: rfc3339(nanos(e.timeUnixNano, 'span event time')),
      name: e.name ?? '',
      attributes: attributes(e.attributes),
    })),
    links: (span.links ?? []).map((l) => ({
      trace_id: hex(l.traceId, 16, 'link trace id') ?? '',
      span_id: hex(l.spanId, 8, 'link span id') ?? '',
      attributes: attributes(l.attributes),
    })),
  };
}

function logEvent(r: LogRecord): Record<string, unknown> {
  const time = nanos(r.timeUnixNano, 'log time') || nanos(r.observedTimeUnixNano, 'observed time');
  const attrs = attributes(r.attributes);
  const traceId = hex(r.traceId, 16, 'trace id');
  const spanId = hex(r.spanId, 8, 'span id');
  return {
    // A record without a time takes the receiver's (as an event without _time does).
    ...(time ? { _time: rfc3339(time) } : {}),
    body: valueOf(r.body),
    ...(r.severityText ? { severity_text: r.severityText } : {}),
    ...(r.severityNumber ? { severity_number: r.severityNumber } : {}),
    ...(traceId ? { trace_id: traceId } : {}),
    ...(spanId ? { span_id: spanId } : {}),
    ...(r.eventName ? { event_name: r.eventName } : {}),
    ...(Object.keys(attrs).length ? { attributes: attrs } : {}),
  };
}

/** Collects events' text, refusing the body once they pass what one request may make. */
class EventTexts {
  readonly events: string[] = [];
  bytes = 0;
  constructor(private readonly maxBytes: number) {}

  push(text: string): void {
    if (text.length > MAX_EVENT_BYTES)
      throw new IngestBodyError('too_large', `an event of ${text.length} characters (at most ${MAX_EVENT_BYTES})`);
    this.bytes += text.length + 1;
    // Each span carries its resource: a small body can make many large events, so what they add up to is bounded.
    if (this.bytes > this.maxBytes)
      throw new IngestBodyError(
        'too_large',
        `the events of this body would take more than ${this.maxBytes} bytes; send smaller exports`,
      );
    this.events.push(text);
  }
}

/**
 * A decompressed OTLP/HTTP body as events (their JSON text), one per span or log record, at most
 * `maxBytes` of them in all (413 beyond).
 */
export function otlpEvents(signal: OtlpSignal, body: Buffer, encoding: OtlpEncoding, maxBytes: number): string[] {
  const out = new EventTexts(maxBytes);
  if (signal === 'traces') {
    const req = decode('traces', body, encoding) as TracesRequest;
    for (const rs of req.resourceSpans ?? []) {
      for (const ss of rs.scopeSpans ?? []) {
        const common = shared(rs.resource, ss.scope);
        for (const span of ss.spans ?? []) out.push(withShared(spanEvent(span), common));
      }
    }
  } else {
    const req = decode('logs', body, encoding) as LogsRequest;
    for (const rl of req.resourceLogs ?? []) {
      for (const sl of rl.scopeLogs ?? []) {
        const common = shared(rl.resource, sl.scope);
        for (const record of sl.logRecords ?? []) out.push(withShared(logEvent(record), common));
      }
    }
  }
  return out.events;
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
