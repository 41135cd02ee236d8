/**
 * Sinks send batches of NDJSON lines (one event each) somewhere: an Axiom-compatible API, or the embedded
 * store. They share this one interface, and the config names them (`type: axiom`). A sink only sends: one
 * attempt per call, answered with a typed outcome. Everything around it (batching, encoding, the disk
 * queue, retries with backoff and the receiver's Retry-After, splitting what is too large, the dead-letter
 * file, health and counters) is the same for every sink and lives once, in ../delivery/.
 */
import type { Logger } from 'pino';
import type { OptionSpecs } from '../../config/options.js';
import type { ComponentSpec } from '../../config/registry.js';
import type { IngestParams } from '../../ingest/request.js';
import type { EventStore } from '../../service/store/event-store.js';
import type { Codec } from '../../util/codec.js';

/**
 * Where a batch goes when its events came with a destination of their own (a relayed request, a file
 * source's `dataset`): the dataset, and, for events relayed from an ingest request, how the receiver reads
 * them (the request's time parameters and labels, in place of the sink's own time settings).
 */
export interface Destination {
  dataset: string;
  params?: IngestParams;
}

/** The body encoding of a batch: how a sink wants it, and how the queue holds it. */
export type Encoding = Codec;

export type TroubleKind = 'unreachable' | 'failing' | 'throttled' | 'refused';

/** Why an attempt did not deliver, as the sink's health says it. */
export interface Trouble {
  kind: TroubleKind;
  /** The receiver's status, when it answered. */
  status?: number;
  /** The receiver's message, or the network error. */
  message: string;
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
   * The encoding it wants its batches in (a compressing sink's `compression`; `none` when absent). The
   * delivery encodes each batch once, before it is queued, so the queue holds less and retries do not
   * encode again.
   */
  readonly encoding?: Encoding;
  /**
   * One attempt to send a batch, in `encoding`: the sink's own, or, for a compressing sink and a batch
   * queued under an earlier configuration, another compression (which the receiver reads as well). The
   * batch's memory is reused once the promise settles: a sink keeps no reference to it. `to`: where the
   * batch goes, when its events came with a destination (the sink's own dataset and settings otherwise).
   * Throws PermanentSinkError for what no retry can fix.
   */
  send(batch: Buffer, encoding: Encoding, to?: Destination): Promise<SendOutcome>;
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
  /** Its dataset, when not set, is the sink's name (it writes locally: the dataset only names files or lines). */
  readonly datasetOptional?: boolean;
  /** It writes into the embedded service, so it needs service.enabled. */
  readonly needsService?: boolean;
  /** Where it delivers, for the start-up log (never a secret). */
  describe?(settings: Settings): Record<string, unknown>;
}
