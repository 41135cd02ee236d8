/**
 * Sinks deliver batches of NDJSON lines (one event each) somewhere: an Axiom-compatible API, or the
 * embedded store. They share this one interface, and the config names them (`type: axiom`).
 * send() resolves only once the batch is delivered (or its refused events are dead-lettered); the
 * queue in front of the sink is acknowledged after that.
 */
import type { Logger } from 'pino';
import type { ComponentSpec } from '../../config/registry.js';
import type { EventStore } from '../../service/store/event-store.js';
import type { DeadLetterFile } from './dead-letter.js';
import type { SinkHealth } from './sink-health.js';

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

export interface Sink {
  readonly counters: SinkCounters;
  /** How delivery is going, for /health and the log. */
  readonly health: SinkHealth;
  /** Where refused events go. */
  readonly deadLetterPath?: string;
  /**
   * Turns part of a batch (NDJSON bytes, a stage of the batcher) into the form it is queued in, once: a
   * sink that compresses its bodies compresses here, so the queue holds less and retries do not compress
   * again. The parts of a batch are queued one after another as its body, so each must be self-contained
   * and concatenate (gzip members, zstd frames). Without it, batches are queued as NDJSON.
   */
  encode?(part: Buffer): Promise<Buffer>;
  /**
   * Delivers one batch as the queue holds it (never re-split): NDJSON, or compressed by encode() under
   * this or an earlier configuration (see encoding.ts). The batch's memory is reused once the promise
   * settles: a sink keeps no reference to it beyond that.
   */
  send(batch: Buffer): Promise<void>;
  /** Stops retrying; a send in progress rejects and its batch stays queued. */
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
  deadLetter: DeadLetterFile;
  counters: SinkCounters;
  health: SinkHealth;
  /** 401, 403 and 404 from a receiver: hold the queue (the daemon) or dead-letter (`ferry pipe`). */
  refusal: 'hold' | 'dead-letter';
  /** The embedded service's store, for a sink that writes into it (absent in remote-only mode). */
  store?: EventStore;
  log: Logger;
}

/** A sink as the config names it (`type: axiom`). */
export interface SinkSpec<Settings = unknown> extends ComponentSpec<Settings> {
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
