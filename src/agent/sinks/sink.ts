/**
 * Sinks send batches of NDJSON lines (one event each) somewhere: an Axiom-compatible API, or the embedded
 * store. They share this one interface, and the config names them (`type: axiom`). A sink only sends: one
 * attempt per call, answered with a typed outcome. Everything around it (batching, the disk queue,
 * retries with backoff and the receiver's Retry-After, splitting what is too large, the dead-letter file,
 * health and counters) is the same for every sink and lives once, in the pipeline's send chain.
 */
import type { Logger } from 'pino';
import type { OptionSpecs } from '../../config/options.js';
import type { ComponentSpec } from '../../config/registry.js';
import type { EventStore } from '../../service/store/event-store.js';
import type { Trouble } from './sink-health.js';

export interface SinkCounters {
  eventsOut: number;
  bytesOut: number;
  retries: number;
  deadLettered: number;
}

export function newSinkCounters(): SinkCounters {
  return { eventsOut: 0, bytesOut: 0, retries: 0, deadLettered: 0 };
}

/** A failure no retry can fix: delivery stops at once (the queue keeps the batch for the next start). */
export class PermanentSinkError extends Error {
  override readonly name = 'PermanentSinkError';
}

/** What came of one attempt to send a batch. */
export type SendOutcome =
  /** Every event accepted; `events` when the receiver says how many (spares counting the lines). */
  | { kind: 'delivered'; events?: number }
  /** Accepted, but these events failed (the receiver's reasons): they go to the dead-letter file. */
  | { kind: 'partly-refused'; events?: number; failures: string[] }
  /** Not now: try again after `waitMs` if the receiver asked for a wait, else after the backoff. */
  | { kind: 'retry'; trouble: Trouble; waitMs?: number }
  /** Too large for the receiver: split it and send the halves. */
  | { kind: 'too-large' }
  /**
   * Refused for good. `config`: for a setting the operator fixes (the token, the dataset), so the queue
   * is held and retried rather than dead-lettered, unless the chain dead-letters refusals (`ferry pipe`).
   */
  | { kind: 'refused'; status?: number; reason: string; config: boolean };

export interface Sink {
  /**
   * Turns part of a batch (NDJSON bytes, a stage of the batcher) into the form it is queued in, once: a
   * sink that compresses its bodies compresses here, so the queue holds less and retries do not compress
   * again. The parts of a batch are queued one after another as its body, so each must be self-contained
   * and concatenate (gzip members, zstd frames). Without it, batches are queued as NDJSON.
   */
  encode?(part: Buffer): Promise<Buffer>;
  /**
   * One attempt to send a batch: NDJSON, or compressed by encode() under this or an earlier configuration
   * (see encoding.ts). The batch's memory is reused once the promise settles: a sink keeps no reference to
   * it. Throws PermanentSinkError for what no retry can fix.
   */
  send(batch: Buffer): Promise<SendOutcome>;
  /** Cuts an attempt in progress short and lets go of connections. */
  close(): Promise<void>;
}

/** What a sink is built with: the settings every sink shares, and the agent's parts it may use. */
export interface SinkContext {
  name: string;
  dataset: string;
  /** Where the receiver takes each event's time from, and in what format (ingest parameters). */
  timestampField?: string;
  timestampFormat?: string;
  /** Fields added to every event on ingest. */
  labels: Record<string, string>;
  /** The embedded service's store, for a sink that writes into it (absent in remote-only mode). */
  store?: EventStore;
  log: Logger;
}

/** A sink as the config names it (`type: axiom`). */
export interface SinkSpec<Settings = unknown, Keys extends OptionSpecs = OptionSpecs> extends ComponentSpec<
  Settings,
  Keys
> {
  create(settings: Settings, ctx: SinkContext): Sink | Promise<Sink>;
  /** It writes into the embedded service, so it needs service.enabled. */
  readonly needsService?: boolean;
  /** Where it delivers, for the start-up log (never a secret). */
  describe?(settings: Settings): Record<string, unknown>;
}

/** A batch of serialised events as the queue and the sinks carry it. */
export function ndjson(lines: readonly string[]): Buffer {
  return Buffer.from(lines.join('\n'));
}

/** How many events a batch holds (its newlines plus one; memchr in native code). */
export function countLines(batch: Buffer): number {
  if (batch.length === 0) return 0;
  let n = 1;
  for (let i = batch.indexOf(10); i >= 0; i = batch.indexOf(10, i + 1)) n++;
  return n;
}

/** The events of a batch, for the slow paths that need them one by one (413 splitting, dead letters). */
export function splitLines(batch: Buffer): string[] {
  return batch.length === 0 ? [] : batch.toString('utf8').split('\n');
}
