/**
 * What an ingest request says besides its body, read the same way by the service's ingest route and the
 * agent's relay (the `http` source): the body's format from its Content-Type, the labels of
 * X-Axiom-Event-Labels, the time parameters, and the CSV options. Pure functions over header and query text.
 */
import { checkTimestampFormat } from '../sql/time.js';
import { IngestBodyError, invalidBody } from './errors.js';

export type BodyFormat = 'json' | 'ndjson' | 'csv';

const FORMATS: Record<string, BodyFormat> = {
  '': 'json',
  'application/json': 'json',
  'application/x-ndjson': 'ndjson',
  'application/nd-json': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
  'application/x-jsonlines': 'ndjson',
  'text/csv': 'csv',
  'application/csv': 'csv',
};

/** The body's format from its Content-Type; anything else is a 415. */
export function bodyFormat(contentType: string | undefined): BodyFormat {
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const format = Object.hasOwn(FORMATS, mediaType) ? FORMATS[mediaType] : undefined;
  if (!format)
    throw new IngestBodyError(
      'unsupported',
      `unsupported Content-Type "${mediaType}" (use application/json, application/x-ndjson or text/csv)`,
    );
  return format;
}

/** How the receiver reads a batch's events: where their time is, and fields added to each. */
export interface IngestParams {
  timestampField?: string;
  timestampFormat?: string;
  /** X-Axiom-Event-Labels: fields set on every event (replacing the event's own of the same name). */
  labels?: Record<string, unknown>;
  /**
   * The kind of dataset the events belong in (an OTel signal's, `otel:traces:v1`), for a receiver that
   * makes datasets on first use (the agent's local sink); not sent over HTTP.
   */
  datasetKind?: string;
  /**
   * The dataset is a setting of the agent's config (a host_metrics source's), not the sender's choice: a
   * receiver refusing it (403, 404) holds the queue for the operator rather than dead-lettering; not sent over HTTP.
   */
  configured?: boolean;
}

const LABELS_SHAPE = 'X-Axiom-Event-Labels must be a JSON object, e.g. {"region":"eu-west-1"}';

/** The labels of an X-Axiom-Event-Labels header, and its size (counted in the result's processedBytes). */
export function parseLabels(header: string | string[] | undefined): { labels: Record<string, unknown>; bytes: number } {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!text) return { labels: {}, bytes: 0 };
  let labels: unknown;
  try {
    labels = JSON.parse(text);
  } catch {
    throw invalidBody(LABELS_SHAPE);
  }
  if (!labels || typeof labels !== 'object' || Array.isArray(labels)) throw invalidBody(LABELS_SHAPE);
  return { labels: labels as Record<string, unknown>, bytes: Buffer.byteLength(text) };
}

/** The request's time parameters, checked: a timestamp-format that is no Go layout or known name is a 400. */
export function timeParams(
  query: Record<string, string | undefined>,
): Pick<IngestParams, 'timestampField' | 'timestampFormat'> {
  const timestampField = query['timestamp-field'] || undefined;
  const timestampFormat = query['timestamp-format'] || undefined;
  if (timestampFormat !== undefined) {
    try {
      checkTimestampFormat(timestampFormat);
    } catch (e) {
      throw invalidBody((e as Error).message);
    }
  }
  if (timestampField?.includes('\u0000') || timestampFormat?.includes('\u0000'))
    throw invalidBody('timestamp-field and timestamp-format may not contain the NUL character (U+0000)');
  return { timestampField, timestampFormat };
}

/** CSV options: the delimiter (csv-delimiter) and field names (X-Axiom-CSV-Fields, then line 1 is data). */
export function csvParams(
  query: Record<string, string | undefined>,
  fieldsHeader: string | string[] | undefined,
): { delimiter?: string; fields: string[] } {
  return {
    delimiter: query['csv-delimiter'] || undefined,
    fields: String(fieldsHeader ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  };
}
