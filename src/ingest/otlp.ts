/**
 * OTLP/HTTP bodies (logs and traces, protobuf or JSON) as events with the field names of Axiom's OTel
 * datasets, shared by the service's /v1/logs and /v1/traces and the agent's `otlp` source.
 *
 * The messages are decoded by protobufjs with the OTLP definitions OpenTelemetry generated for its own
 * exporters (`otlp-definitions`, OpenTelemetry's otlp-transformer at a version that ships them): protobuf
 * item by item with the generated types' `decode` (protobufjs's reader walks the levels above the items), the
 * OTLP JSON mapping with `fromObject`, after turning the JSON's hex trace and span ids into bytes (protobuf's
 * JSON mapping would read them as base64). Item by item, because a decoded message is many times its
 * encoded size: a small gzip body of empty spans would otherwise take gigabytes before any limit applied.
 *
 * A span becomes `{_time, trace_id, span_id, parent_span_id, name, kind, duration, error, status_code,
 * status.message, service.name, scope.name, scope.version, attributes.<key>, resource.<key>, events, links}`
 * with `duration` in nanoseconds; a log record `{_time, body, severity_text, severity_number, trace_id,
 * span_id, service.name, scope.*, attributes.<key>, resource.<key>}`. Attribute keys keep their dots within
 * one object level (`{"attributes": {"http.method": "GET"}}`), which the store names `attributes.http.method`.
 */
import { createRequire } from 'node:module';
import protobuf, { type Reader } from 'protobufjs/minimal.js';
import { IngestBodyError, invalidBody } from './errors.js';
import { MAX_EVENT_BYTES } from './events.js';
import { eventCost, otlpFullSuccess, type OtlpEncoding, type OtlpSignal } from './otlp-http.js';

export { eventsCost, OTLP_MAX_BYTES, otlpEncoding, type OtlpEncoding, type OtlpSignal } from './otlp-http.js';

/** The protobufjs message types this module uses (the generated definitions carry no TypeScript types). */
export interface MessageType {
  decode(reader: Reader | Uint8Array, length?: number): unknown;
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
      trace: { v1: { Span: MessageType } };
      logs: { v1: { LogRecord: MessageType } };
      resource: { v1: { Resource: MessageType } };
      common: { v1: { InstrumentationScope: MessageType } };
    };
  };
};
const { collector, trace, logs, resource: resourceProto, common } = definitions.opentelemetry.proto;
const { Reader: Readers } = protobuf;

/** A 64-bit integer as protobufjs gives it (a Long, or a number). */
export type Int64 = number | { toString(): string } | null | undefined;

export interface AnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: Int64;
  doubleValue?: number | null;
  arrayValue?: { values?: AnyValue[] | null } | null;
  kvlistValue?: { values?: KeyValue[] | null } | null;
  bytesValue?: Uint8Array | null;
}

export interface KeyValue {
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
export function nanos(v: Int64, what = 'time'): bigint {
  if (v === null || v === undefined) return 0n;
  let n = BigInt(typeof v === 'number' ? Math.trunc(v) : v.toString());
  if (n < 0n) n += 2n ** 64n;
  if (n > MAX_NANOS) throw invalidBody(`a ${what} of ${n} ns since 1970 is past 2262`);
  return n;
}

/** An int64 attribute value: its text when a number cannot hold it exactly (also past int64, as sent). */
export function integer(v: Int64): number | string {
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

/** The fields every event of a resource carries, as JSON members: written once per resource. */
interface ResourceText {
  /** `"service.name":"cart"`, or ''. */
  service: string;
  /** `"resource":{…}`, or ''. */
  resource: string;
}

function resourceFields(resource: Resource | null | undefined): ResourceText {
  const res = attributes(resource?.attributes);
  const serviceName = res['service.name'];
  return {
    service:
      serviceName !== undefined && serviceName !== null
        ? JSON.stringify({ 'service.name': serviceName }).slice(1, -1)
        : '',
    resource: Object.keys(res).length ? JSON.stringify({ resource: res }).slice(1, -1) : '',
  };
}

/**
 * The fields every event of a resource and scope carries, as JSON members (or '' when none): appended to
 * each event's text, not copied into each event's object.
 */
function shared(res: ResourceText, scope: Scope | null | undefined): string {
  const scopeText = JSON.stringify({
    ...(scope?.name ? { 'scope.name': scope.name } : {}),
    ...(scope?.version ? { 'scope.version': scope.version } : {}),
  }).slice(1, -1);
  return [res.service, scopeText, res.resource].filter((t) => t !== '').join(',');
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

/** Collects events' text, refusing the body once what holding them costs (eventCost) passes `maxBytes`. */
class EventTexts {
  readonly events: string[] = [];
  bytes = 0;
  constructor(private readonly maxBytes: number) {}

  push(text: string): void {
    if (text.length > MAX_EVENT_BYTES)
      throw new IngestBodyError('too_large', `an event of ${text.length} characters (at most ${MAX_EVENT_BYTES})`);
    this.bytes += eventCost(text);
    // Each span carries its resource: a small body can make many large events, so what they add up to is bounded.
    if (this.bytes > this.maxBytes)
      throw new IngestBodyError(
        'too_large',
        `the events of this body would take more than ${this.maxBytes} bytes; send smaller exports`,
      );
    this.events.push(text);
  }
}

/** The three levels of an export, the same for both signals but for their names. */
interface SignalShape {
  /** The message of one event: Span or LogRecord. */
  item: MessageType;
  toEvent(item: unknown): Record<string, unknown>;
  /** The JSON names of the lists: resourceSpans, scopeSpans, spans. */
  lists: readonly [resources: string, scopes: string, items: string];
  /** The JSON members of an item (and of its links) that hold ids in hex. */
  idKeys: readonly string[];
}

const SHAPES: Record<OtlpSignal, SignalShape> = {
  traces: {
    item: trace.v1.Span,
    toEvent: (span) => spanEvent(span as Span),
    lists: ['resourceSpans', 'scopeSpans', 'spans'],
    idKeys: ['traceId', 'spanId', 'parentSpanId'],
  },
  logs: {
    item: logs.v1.LogRecord,
    toEvent: (record) => logEvent(record as LogRecord),
    lists: ['resourceLogs', 'scopeLogs', 'logRecords'],
    idKeys: ['traceId', 'spanId'],
  },
};

/**
 * The length-delimited fields of the message that ends at `end`, as [field number, end], the reader at the
 * field's content; when the consumer asks for the next, the reader goes past the field whatever it read. A
 * field numbered up to `messageFields` (the levels' messages and lists) with another wire type makes the
 * body malformed; other fields are skipped.
 */
export function* fields(reader: Reader, end: number, what: string, messageFields: number): Generator<[number, number]> {
  while (reader.pos < end) {
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 0) throw new Error(`${what} has a field numbered 0`);
    if (wire !== 2) {
      if (field <= messageFields) throw new Error(`field ${field} of ${what} is not length-delimited`);
      reader.skipType(wire);
      continue;
    }
    const fieldEnd = reader.uint32() + reader.pos;
    if (fieldEnd > end) throw new Error(`field ${field} of ${what} runs past its end`);
    yield [field, fieldEnd];
    reader.pos = fieldEnd;
  }
  if (reader.pos !== end) throw new Error(`${what} runs past its end`);
}

/**
 * The range of the last field numbered `wanted` in the message from the reader to `end` (a repeated message
 * field replaces the last, as decode does; it may follow the lists on the wire), or undefined.
 */
export function lastField(reader: Reader, end: number, what: string, wanted: number): [number, number] | undefined {
  let found: [number, number] | undefined;
  for (const [field, fieldEnd] of fields(reader, end, what, 2)) if (field === wanted) found = [reader.pos, fieldEnd];
  return found;
}

/**
 * Decodes the message from the reader's position to `end`: one that reads past its end (a length inside it
 * that runs over) makes the body malformed, as decoding the whole would have found.
 */
export function decodeTo(type: MessageType, reader: Reader, end: number): unknown {
  const message = type.decode(reader, end - reader.pos);
  if (reader.pos !== end) throw new Error('a message runs past its end');
  return message;
}

/** Decodes the message in `range`, or null when there is none. */
export function decodeAt(type: MessageType, reader: Reader, range: [number, number] | undefined): unknown {
  if (!range) return null;
  reader.pos = range[0];
  return decodeTo(type, reader, range[1]);
}

/**
 * A protobuf export's events, one item at a time: the levels above the items are walked with protobufjs's
 * reader and each span or log record is decoded by its own generated type, made an event and let go, so
 * what a body holds in memory at once is its events' text, its resource and scope, and one decoded item.
 */
function* protobufEvents(shape: SignalShape, body: Buffer): Generator<string> {
  const reader = Readers.create(body);
  const [resources, scopes] = shape.lists;
  for (const [field, resourceEnd] of fields(reader, body.length, 'the export', 1)) {
    if (field !== 1) continue;
    const resourceStart = reader.pos;
    const resourceAt = lastField(reader, resourceEnd, `an entry of ${resources}`, 1);
    const resourceText = resourceFields(decodeAt(resourceProto.v1.Resource, reader, resourceAt) as Resource | null);
    reader.pos = resourceStart;
    for (const [f, scopeEnd] of fields(reader, resourceEnd, `an entry of ${resources}`, 2)) {
      if (f !== 2) continue;
      const scopeStart = reader.pos;
      const scopeAt = lastField(reader, scopeEnd, `an entry of ${scopes}`, 1);
      const sharedText = shared(
        resourceText,
        decodeAt(common.v1.InstrumentationScope, reader, scopeAt) as Scope | null,
      );
      reader.pos = scopeStart;
      for (const [g, itemEnd] of fields(reader, scopeEnd, `an entry of ${scopes}`, 2))
        if (g === 2) yield withShared(shape.toEvent(decodeTo(shape.item, reader, itemEnd)), sharedText);
    }
  }
}

/**
 * JSON.parse's reviver: OTLP JSON writes ids in hex, which protobuf's JSON mapping would read as base64 (they
 * are made bytes item by item, see jsonItem). Bytes given as anything but a string are refused: protobufjs
 * would take any object with a `length`.
 */
function checkIds(key: string, value: unknown): unknown {
  if (key === 'bytesValue' && typeof value !== 'string') throw new Error('bytesValue must be a base64 string');
  if (key !== 'traceId' && key !== 'spanId' && key !== 'parentSpanId') return value;
  if (typeof value !== 'string') throw new Error(`${key} must be a hex string`);
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(value)) throw new Error(`${key} "${value.slice(0, 40)}" is not hex`);
  return value;
}

function listOf(value: unknown, what: string): unknown[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new Error(`${what}: array expected`);
  return value;
}

function objectOf(value: unknown, what: string): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${what}: object expected`);
  return value as Record<string, unknown>;
}

/** A JSON item with its ids (and its links' ids) as bytes, for fromObject. */
function jsonItem(item: Record<string, unknown>, idKeys: readonly string[]): Record<string, unknown> {
  const bytes = (v: unknown) => (typeof v === 'string' ? Buffer.from(v, 'hex') : v);
  const out = { ...item };
  for (const key of idKeys) if (key in out) out[key] = bytes(out[key]);
  if (Array.isArray(out.links))
    out.links = out.links.map((l: unknown) =>
      l && typeof l === 'object'
        ? {
            ...l,
            traceId: bytes((l as Record<string, unknown>).traceId),
            spanId: bytes((l as Record<string, unknown>).spanId),
          }
        : l,
    );
  return out;
}

/** A JSON export's events (the OTLP JSON mapping): parsed whole, each item by its generated type's fromObject. */
function* jsonEvents(shape: SignalShape, body: Buffer): Generator<string> {
  const [resources, scopes, items] = shape.lists;
  const root = objectOf(JSON.parse(body.length === 0 ? '{}' : body.toString('utf8'), checkIds), 'the export');
  for (const [i, entry] of listOf(root[resources], resources).entries()) {
    const level = objectOf(entry, `${resources}[${i}]`);
    const resourceText = resourceFields(
      level.resource === null || level.resource === undefined
        ? null
        : (resourceProto.v1.Resource.fromObject(objectOf(level.resource, `${resources}[${i}].resource`)) as Resource),
    );
    for (const [j, scopeEntry] of listOf(level[scopes], `${resources}[${i}].${scopes}`).entries()) {
      const at = `${resources}[${i}].${scopes}[${j}]`;
      const scopeLevel = objectOf(scopeEntry, at);
      const scope =
        scopeLevel.scope === null || scopeLevel.scope === undefined
          ? null
          : (common.v1.InstrumentationScope.fromObject(objectOf(scopeLevel.scope, `${at}.scope`)) as Scope);
      const sharedText = shared(resourceText, scope);
      for (const [k, item] of listOf(scopeLevel[items], `${at}.${items}`).entries()) {
        const fields = jsonItem(objectOf(item, `${at}.${items}[${k}]`), shape.idKeys);
        yield withShared(shape.toEvent(shape.item.fromObject(fields)), sharedText);
      }
    }
  }
}

/**
 * A decompressed OTLP/HTTP body as events (their JSON text), one per span or log record, at most
 * what holding them costs `maxBytes` in all (eventsCost; 413 beyond). A body that does not decode is
 * a 400 naming why. The work and memory this takes depend on the body's structure more than on its size,
 * so the service and the agent run it in a worker thread of its own (otlp-decoder.ts).
 */
export function otlpEvents(signal: OtlpSignal, body: Buffer, encoding: OtlpEncoding, maxBytes: number): string[] {
  const out = new EventTexts(maxBytes);
  const shape = SHAPES[signal];
  try {
    const events = encoding === 'protobuf' ? protobufEvents(shape, body) : jsonEvents(shape, body);
    for (const text of events) out.push(text);
  } catch (e) {
    if (e instanceof IngestBodyError) throw e;
    throw invalidBody(
      `invalid OTLP ${signal} ${encoding === 'json' ? 'JSON' : 'protobuf'} body: ${(e as Error).message}`,
    );
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
  if (!partial) return otlpFullSuccess(encoding);
  const rejected = signal === 'traces' ? 'rejectedSpans' : 'rejectedLogRecords';
  const object = partial ? { partialSuccess: { [rejected]: partial.rejected, errorMessage: partial.message } } : {};
  if (encoding === 'json') return { contentType: 'application/json', body: Buffer.from(JSON.stringify(object)) };
  const type =
    signal === 'traces' ? collector.trace.v1.ExportTraceServiceResponse : collector.logs.v1.ExportLogsServiceResponse;
  return { contentType: 'application/x-protobuf', body: Buffer.from(type.encode(type.fromObject(object)).finish()) };
}
