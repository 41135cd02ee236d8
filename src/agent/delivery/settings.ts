/**
 * The keys every sink takes, whatever its type: what it reads and where to, how events are batched and
 * queued in front of it, how many batches are in flight and how failed ones are retried. Read here once
 * for all sinks: the send chain around every sink applies them.
 */
import {
  bytes,
  duration,
  group,
  int,
  names,
  oneOf,
  scalarMap,
  str,
  type Options,
  type OptionSpecs,
} from '../../config/options.js';
import type { WhenFull } from '../queue/disk-queue.js';
import type { BatchLimits } from './batcher.js';
import { DEFAULT_SINK_CONCURRENCY } from './send-loop.js';
import { DEFAULT_BACKOFF, type BackoffOptions } from '../../util/retry.js';

export interface SinkSettings {
  inputs: string[];
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

export const SINK_OPTIONS = {
  inputs: names().required().doc('the sources or transforms it ships'),
  dataset: str()
    .doc(
      "where it ships to: events that come with a dataset of their own (a file source's `dataset`, the dataset of a relayed request) go to theirs, in batches of one dataset each",
    )
    .shown("required; for `console` and `file`, the sink's name"),
  concurrency: int(DEFAULT_SINK_CONCURRENCY, { min: 1, max: 64 }).doc(
    'batches in flight at once (one compresses while others are on the wire); the queue is acknowledged in order, so a batch still retrying holds back the ones after it',
  ),
  timestamp_field: str()
    .doc("where the receiver takes each event's time from (ingest API parameter)")
    .shown("the receiver's (`_time`)"),
  timestamp_format: str().doc('the format of that field (ingest API parameter)').shown('detected'),
  labels: scalarMap().doc('fields the receiver adds to every event (`X-Axiom-Event-Labels`)'),
  dead_letter: str()
    .doc(
      'file for events the receiver refused (4xx other than 401/403/404/408/413/429, or listed as failed), with status and error',
    )
    .shown('`<data_dir>/dead-letter/<sink>.ndjson`'),
  batch: group({
    max_events: int(10_000, { min: 1 }).doc('a batch is cut at this many events'),
    max_bytes: bytes('5MiB').doc('… or at this size (before compression)'),
    timeout: duration('1s').doc('… or when its first event has waited this long'),
  }),
  queue: group({
    max_bytes: bytes('256MiB').doc("the disk queue's cap, in queued (so compressed) bytes"),
    when_full: oneOf(['block', 'drop_newest'], 'block').doc(
      'when the queue is full: `block` (backpressure reaches the sources, the files stay the buffer) or `drop_newest` (the new batch is dropped and counted)',
    ),
  }),
  retry: group({
    initial_backoff: duration(`${DEFAULT_BACKOFF.initialMs}ms`).doc(
      'what the receiver may take later (for `axiom`: network errors, 401, 403, 404, 408, 429 and 5xx) is retried with exponential backoff and full jitter from this wait, honouring `Retry-After` and `X-RateLimit-Reset`; what is too large (413) is split',
    ),
    max_backoff: duration(`${DEFAULT_BACKOFF.maxMs / 1000}s`).doc('the longest wait between attempts'),
    max_attempts: int(0, { min: 0 }).doc('attempts per batch before delivery stops; `0` = forever'),
  }),
} satisfies OptionSpecs;

/**
 * @param datasetByName the sink's name is its dataset when none is set (a sink that writes locally, where
 *   a dataset only names files or lines), instead of the key being required
 */
export function configureSink(o: Options, datasetByName?: string): SinkSettings {
  const v = o.read(SINK_OPTIONS);
  const dataset = v.dataset ?? datasetByName ?? o.fail('dataset', 'required: the dataset this sink ships to');
  return {
    inputs: v.inputs,
    dataset,
    concurrency: v.concurrency,
    timestampField: v.timestamp_field,
    timestampFormat: v.timestamp_format,
    labels: Object.fromEntries(Object.entries(v.labels).map(([k, x]) => [k, String(x)])),
    deadLetter: v.dead_letter,
    batch: { maxEvents: v.batch.max_events, maxBytes: v.batch.max_bytes, timeoutMs: v.batch.timeout },
    queue: { maxBytes: v.queue.max_bytes, whenFull: v.queue.when_full },
    retry: {
      initialMs: v.retry.initial_backoff,
      maxMs: v.retry.max_backoff,
      maxAttempts: v.retry.max_attempts,
    },
  };
}
