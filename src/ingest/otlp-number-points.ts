/**
 * A gauge's or a sum's data points read straight from the protobuf bytes of their Metric, for
 * otlp-metrics.ts: no message object is made for a point, and its attributes stay bytes until its series
 * is first met (the bytes of a point's attributes name its series within a metric, so the points of a
 * series after its first cost a map lookup and no decoding). A Metric of any other shape (a histogram, a
 * summary, two data fields) is left to protobufjs's decoding. What a point means is otlp-metrics.ts's. Pure.
 */
import type { Reader } from 'protobufjs/minimal.js';
import { invalidBody } from './errors.js';

/** A gauge's or a sum's metric: its fields, and where each of its data points lies in the body. */
export interface NumberMetric {
  name: string;
  unit: string | null;
  kind: 'gauge' | 'sum';
  /** The sum's aggregation_temporality (0 for a gauge). */
  temporality: number;
  monotonic: boolean;
  /** Each data point's [start, end) in the body. */
  points: number[];
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
/** A NumberDataPoint's fields 2 to 8 and their wire types (start and time, as_double, exemplars, as_int, attributes, flags). */
const POINT_WIRES: Record<number, number> = {
  2: WIRE_FIXED64,
  3: WIRE_FIXED64,
  4: WIRE_FIXED64,
  5: WIRE_BYTES,
  6: WIRE_FIXED64,
  7: WIRE_BYTES,
  8: WIRE_VARINT,
};

/** Reads a field's tag; the field's number and wire type. */
function tagOf(reader: Reader): [number, number] {
  const tag = reader.uint32();
  return [tag >>> 3, tag & 7];
}

/**
 * Refuses a known field sent with another wire type than its own: protobufjs's decoding would read it as
 * its own type anyway (and make something else of it), so the body is malformed, not merely new.
 */
function expectWire(field: number, wire: number, own: number, what: string): void {
  if (wire !== own) throw new Error(`field ${field} of ${what} has wire type ${wire}, not ${own}`);
}

/** The end of a length-delimited field whose length comes next, checked against its message's end. */
function bytesEnd(reader: Reader, end: number, what: string): number {
  const fieldEnd = reader.uint32() + reader.pos;
  if (fieldEnd > end) throw new Error(`a field of ${what} runs past its end`);
  return fieldEnd;
}

/**
 * The Metric between reader.pos and `end` when it is a gauge or a sum (its data field once, no other);
 * undefined otherwise. Leaves reader.pos anywhere: the caller decodes the Metric afresh when undefined.
 */
export function scanNumberMetric(body: Buffer, reader: Reader, end: number): NumberMetric | undefined {
  let name = '';
  let unit: string | null = null;
  let data: [number, number] | undefined;
  let kind: 'gauge' | 'sum' | undefined;
  while (reader.pos < end) {
    const [field, wire] = tagOf(reader);
    if (field >= 1 && field <= 12 && field !== 4 && field !== 6 && field !== 8)
      expectWire(field, wire, WIRE_BYTES, 'a metric');
    if (wire !== WIRE_BYTES) {
      reader.skipType(wire);
      continue;
    }
    const fieldEnd = bytesEnd(reader, end, 'a metric');
    if (field === 1) name = body.toString('utf8', reader.pos, fieldEnd);
    else if (field === 3) unit = fieldEnd > reader.pos ? body.toString('utf8', reader.pos, fieldEnd) : null;
    else if (field === 5 || field === 7) {
      if (data) return undefined;
      data = [reader.pos, fieldEnd];
      kind = field === 5 ? 'gauge' : 'sum';
    } else if (field === 9 || field === 10 || field === 11) return undefined;
    reader.pos = fieldEnd;
  }
  if (reader.pos !== end) throw new Error('a metric runs past its end');
  if (!data || !kind) return undefined;
  const metric: NumberMetric = { name, unit, kind, temporality: 0, monotonic: false, points: [] };
  reader.pos = data[0];
  while (reader.pos < data[1]) {
    const [field, wire] = tagOf(reader);
    if (field === 1) {
      expectWire(field, wire, WIRE_BYTES, `a ${kind}`);
      const pointEnd = bytesEnd(reader, data[1], `a ${kind}`);
      metric.points.push(reader.pos, pointEnd);
      reader.pos = pointEnd;
    } else if (kind === 'sum' && (field === 2 || field === 3)) {
      expectWire(field, wire, WIRE_VARINT, 'a sum');
      if (field === 2) metric.temporality = reader.int32();
      else metric.monotonic = reader.bool();
    } else reader.skipType(wire);
  }
  if (reader.pos !== data[1]) throw new Error(`a ${kind} runs past its end`);
  return metric;
}

/** A data point as read: reused from one point to the next. */
export interface ScannedPoint {
  /**
   * Where its attribute fields lie: [start, end) pairs, each field's tag included, pairs that touch joined
   * (one pair as every encoder writes them). The same bytes are the same attributes.
   */
  spans: number[];
  /** Each attribute's KeyValue message as [start, end) pairs. */
  attributes: number[];
  /** Seconds since 1970 of time_unix_nano, 0 when absent. */
  seconds: number;
  /** Whether time_unix_nano was absent or zero. */
  noTime: boolean;
  /** as_int when sent, else as_double (as protobufjs's decoding reads a point that has both); undefined when neither. */
  value: number | undefined;
  flags: number;
}

export const scannedPoint = (): ScannedPoint => ({
  spans: [],
  attributes: [],
  seconds: 0,
  noTime: true,
  value: undefined,
  flags: 0,
});

/** The bytes of a point's attributes as latin1 text: one text for one list of attributes. */
export function attributesText(body: Buffer, p: ScannedPoint): string {
  let text = '';
  for (let i = 0; i < p.spans.length; i += 2) text += body.toString('latin1', p.spans[i], p.spans[i + 1]);
  return text;
}

/** Whether two points' attributes are the same bytes. */
export function sameAttributes(body: Buffer, a: ScannedPoint, b: ScannedPoint): boolean {
  if (a.spans.length !== b.spans.length) return false;
  for (let i = 0; i < a.spans.length; i += 2) {
    const [as, ae, bs, be] = [a.spans[i]!, a.spans[i + 1]!, b.spans[i]!, b.spans[i + 1]!];
    if (ae - as !== be - bs || body.compare(body, bs, be, as, ae) !== 0) return false;
  }
  return true;
}

/** Reads the NumberDataPoint at [start, end) into `into`. */
export function readNumberPoint(reader: Reader, start: number, end: number, into: ScannedPoint): void {
  const spans = into.spans;
  const attributes = into.attributes;
  let spanCount = 0;
  let attributeCount = 0;
  into.seconds = 0;
  into.noTime = true;
  into.value = undefined;
  into.flags = 0;
  let int: number | undefined;
  reader.pos = start;
  while (reader.pos < end) {
    const at = reader.pos;
    const [field, wire] = tagOf(reader);
    if (field >= 2 && field <= 8) expectWire(field, wire, POINT_WIRES[field]!, 'a data point');
    if (field === 7) {
      const attributeEnd = bytesEnd(reader, end, 'a data point');
      attributes[attributeCount++] = reader.pos;
      attributes[attributeCount++] = attributeEnd;
      if (spanCount > 0 && spans[spanCount - 1] === at) spans[spanCount - 1] = attributeEnd;
      else {
        spans[spanCount++] = at;
        spans[spanCount++] = attributeEnd;
      }
      reader.pos = attributeEnd;
    } else if (field === 3) {
      const low = reader.fixed32();
      const high = reader.fixed32();
      into.noTime = low === 0 && high === 0;
      into.seconds = into.noTime ? 0 : secondsOfNanos(high, low);
    } else if (field === 4) into.value = reader.double();
    else if (field === 6) {
      const low = reader.fixed32();
      const high = reader.fixed32();
      // Rounded once, as converting the exact integer would be.
      int = (high | 0) * 4294967296 + low;
    } else if (field === 8) into.flags = reader.uint32();
    else reader.skipType(wire);
  }
  if (reader.pos !== end) throw new Error('a data point runs past its end');
  if (int !== undefined) into.value = int;
  if (spans.length !== spanCount) spans.length = spanCount;
  if (attributes.length !== attributeCount) attributes.length = attributeCount;
}

/**
 * Whole seconds of a fixed64 count of nanoseconds given as its unsigned 32-bit halves: divided by 10^9 in
 * base 2^16 digits, so every step is exact in a double. Past int64 (2262) refuses the body.
 */
export function secondsOfNanos(high: number, low: number): number {
  if (high > 0x7fffffff) {
    const ns = (BigInt(high) << 32n) | BigInt(low);
    throw invalidBody(`a point time of ${ns} ns since 1970 is past 2262`);
  }
  const D = 1_000_000_000;
  let r = high >>> 16;
  const q3 = Math.floor(r / D);
  r = (r - q3 * D) * 65536 + (high & 0xffff);
  const q2 = Math.floor(r / D);
  r = (r - q2 * D) * 65536 + (low >>> 16);
  const q1 = Math.floor(r / D);
  r = (r - q1 * D) * 65536 + (low & 0xffff);
  const q0 = Math.floor(r / D);
  return ((q3 * 65536 + q2) * 65536 + q1) * 65536 + q0;
}
