/**
 * The keys every sink takes, whatever its type: what it reads and where to, how events are batched and
 * queued in front of it, how many batches are in flight and how failed ones are retried. Read here once
 * for all sinks: the send chain around every sink applies them.
 */
import type { Options, OptionSpecs } from '../../config/options.js';
import type { WhenFull } from '../queue/disk-queue.js';
import { type BatchLimits, DEFAULT_BATCH } from './batcher.js';
import { DEFAULT_SINK_CONCURRENCY } from './delivery.js';
import { DEFAULT_BACKOFF, type BackoffOptions } from '../../util/retry.js';

export interface SinkSettings {
  dataset: string;
  /** Batches in flight at once (acknowledged in order). */
  concurrency: number;
  timestampField?: string;
  timestampFormat?: string;
  labels: Record<string, string>;
  /** Default: <agent data dir>/dead-letter/<sink name>.ndjson */
  deadLetter?: string;
  batch: BatchLimits;
  queue: { maxBytes: number; whenFull: WhenFull };
  retry: BackoffOptions & { maxAttempts: number };
}

const DEFAULT_QUEUE_BYTES = 256 * 1024 * 1024;

export const SINK_OPTIONS: OptionSpecs = {
  inputs: {
    schema: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
    doc: 'the sources or transforms it ships',
  },
  dataset: { schema: { type: 'string', minLength: 1 }, doc: 'where it ships to' },
  concurrency: {
    schema: { type: 'integer', minimum: 1, maximum: 64 },
    doc: 'batches in flight at once (one compresses while others are on the wire); the queue is acknowledged in order, so a batch still retrying holds back the ones after it',
    default: `\`${DEFAULT_SINK_CONCURRENCY}\``,
  },
  timestamp_field: {
    schema: { type: 'string', minLength: 1 },
    doc: "where the receiver takes each event's time from (ingest API parameter)",
    default: '`_time`',
  },
  timestamp_format: {
    schema: { type: 'string', minLength: 1 },
    doc: 'the format of that field (ingest API parameter)',
    default: 'detected',
  },
  labels: {
    schema: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    doc: 'fields the receiver adds to every event (`X-Axiom-Event-Labels`)',
    default: 'none',
  },
  dead_letter: {
    schema: { type: 'string', minLength: 1 },
    doc: 'file for events the receiver refused (4xx other than 401/403/404/408/413/429, or listed as failed), with status and error',
    default: '`<data_dir>/dead-letter/<sink>.ndjson`',
  },
  batch: {
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        max_events: { type: 'integer', minimum: 1 },
        max_bytes: { type: ['string', 'integer'] },
        timeout: { type: 'string' },
      },
    },
    doc: '`max_events`, `max_bytes`, `timeout`: a batch is cut at whichever comes first',
    default: `\`${DEFAULT_BATCH.maxEvents}\`, \`5MiB\`, \`1s\``,
  },
  queue: {
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: { max_bytes: { type: ['string', 'integer'] }, when_full: { enum: ['block', 'drop_newest'] } },
    },
    doc: "`max_bytes`, `when_full`: the disk queue's cap (in queued, so compressed, bytes), and `block` or `drop_newest`",
    default: '`256MiB`, `block`',
  },
  retry: {
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        initial_backoff: { type: 'string' },
        max_backoff: { type: 'string' },
        max_attempts: { type: 'integer', minimum: 0 },
      },
    },
    doc: '`initial_backoff`, `max_backoff`, `max_attempts`: what the receiver may take later (for `axiom`: network errors, 401, 403, 404, 408, 429 and 5xx) is retried with exponential backoff and full jitter, honouring `Retry-After` and `X-RateLimit-Reset`; what is too large (413) is split; `0` attempts = forever',
    default: '`250ms`, `30s`, `0`',
  },
};

export function configureSink(o: Options): SinkSettings {
  const b = o.nested('batch');
  const q = o.nested('queue');
  const r = o.nested('retry');
  return {
    dataset: o.get<string>('dataset')!,
    concurrency: o.or('concurrency', DEFAULT_SINK_CONCURRENCY),
    timestampField: o.get('timestamp_field'),
    timestampFormat: o.get('timestamp_format'),
    labels: Object.fromEntries(
      Object.entries(o.or<Record<string, unknown>>('labels', {})).map(([k, v]) => [k, String(v)]),
    ),
    deadLetter: o.get('dead_letter'),
    batch: {
      maxEvents: b.or('max_events', DEFAULT_BATCH.maxEvents),
      maxBytes: b.bytes('max_bytes', DEFAULT_BATCH.maxBytes),
      timeoutMs: b.ms('timeout', DEFAULT_BATCH.timeoutMs),
    },
    queue: { maxBytes: q.bytes('max_bytes', DEFAULT_QUEUE_BYTES), whenFull: q.or<WhenFull>('when_full', 'block') },
    retry: {
      initialMs: r.ms('initial_backoff', DEFAULT_BACKOFF.initialMs),
      maxMs: r.ms('max_backoff', DEFAULT_BACKOFF.maxMs),
      maxAttempts: r.or('max_attempts', 0),
    },
  };
}
