/**
 * What OTLP/HTTP asks of a receiver besides decoding (ingest/otlp.ts, in a worker): the body's encoding from
 * its Content-Type, the size limit, what holding the events costs, and the answer to an export taken whole.
 * Apart from the decoder so that a receiver's own thread never loads protobufjs and the OTLP definitions.
 */
import { IngestBodyError } from './errors.js';

export type OtlpSignal = 'logs' | 'traces';

/**
 * The largest OTLP body taken once decompressed: it is held whole in memory while its items are decoded (the
 * OpenTelemetry Collector's receiver takes 20 MiB by default).
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

/** What holding one event's text costs besides its characters: the string's header and its slot. */
const EVENT_OVERHEAD = 48;

/**
 * What holding an event's text costs where it is received (two bytes a character, as a string may need):
 * in the worker, events share their resource's text; copied out, each holds its own.
 */
export const eventCost = (text: string) => text.length * 2 + EVENT_OVERHEAD;

/** What holding events' text costs. */
export const eventsCost = (events: readonly string[]) => events.reduce((n, e) => n + eventCost(e), 0);

/**
 * The answer to an export taken whole: an Export*ServiceResponse without partial_success, which protobuf
 * writes as no bytes at all and the JSON mapping as an empty object.
 */
export function otlpFullSuccess(encoding: OtlpEncoding): { contentType: string; body: Buffer } {
  return encoding === 'json'
    ? { contentType: 'application/json', body: Buffer.from('{}') }
    : { contentType: 'application/x-protobuf', body: Buffer.alloc(0) };
}
