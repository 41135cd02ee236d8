/**
 * Sources read lines from the outside world (files, stdin) and hand them on. They share this one interface,
 * and the config names them (`type: file`), as in Vector or the OpenTelemetry Collector.
 *
 * Each line belongs to a stream (one file, or stdin) and carries the offset just past it. Once every sink
 * downstream holds a line durably, the pipeline acknowledges its offset to the stream, and a file source
 * checkpoints it: a restart resumes after the last line known to be safe (at least once).
 */
import type { Logger } from 'pino';
import type { IngestParams } from '../../ingest/request.js';
import { bytes, type OptionSpecs } from '../../config/options.js';
import type { ComponentSpec } from '../../config/registry.js';

export interface Stream {
  /** Unique among the agent's streams; names the stream in stateful parsers and in metrics. */
  readonly id: string;
  /** The name of the source that reads it. */
  readonly source: string;
  /** The file a line came from (enrichment with the source path), if any. */
  readonly path?: string;
  /**
   * Its lines are whole events and it is used once (a relayed request): transforms keep no state for it
   * (no parser holding a partial line, no multiline joiner), so streams made per request leave nothing behind.
   */
  readonly whole?: boolean;
  /** Every line up to `offset` is durable downstream. `generation` changes when a file is truncated. */
  acknowledge(offset: number, generation: number): void;
  /**
   * A sink's full queue refused lines of this stream (`when_full: drop_newest`); they are acknowledged all
   * the same. A source that answers its sender (the relay) says so instead of accepting them.
   */
  dropped?(): void;
}

export interface SourceLine {
  /** The line; '' when the source was told nothing downstream reads it (passthrough), then `raw` holds it. */
  text: string;
  raw?: Buffer;
  /**
   * `raw` holds this many lines, not one: whole lines, each looking like a JSON object, joined by their
   * newlines as they lie in the stream, and `offset` is just past the last one's (a run: LineSplitter.nextRun).
   * Only a source whose lines no transform reads hands runs; sinks batch a run as its lines.
   */
  lines?: number;
  truncated: boolean;
  /**
   * The text is one JSON object, an event's fields (a journal entry), not a line to wrap in `message`: a
   * transform reads its fields, and a sink ships it as it is.
   */
  structured?: boolean;
  /** The dataset the event goes to, when its source says (a sink's `dataset` otherwise). */
  dataset?: string;
  /**
   * With `dataset`, how the receiver reads the event (a relayed request's time parameters and labels), in
   * place of the sink's own time settings. One object for the same parameters: batches are cut where it changes.
   */
  params?: IngestParams;
  stream: Stream;
  offset: number;
  generation: number;
  /**
   * Which copy of the line this is, where the topology gives a source's lines several paths to sinks (set
   * by the pipeline at each fork; absent, the source's only path): each copy is acknowledged on its own.
   */
  route?: number;
}

export interface SourceCounters {
  linesIn: number;
  bytesIn: number;
  truncatedLines: number;
}

export function newSourceCounters(): SourceCounters {
  return { linesIn: 0, bytesIn: 0, truncatedLines: 0 };
}

export interface Source {
  readonly name: string;
  readonly counters: SourceCounters;
  /** Starts reading; `emit` is awaited, so a slow pipeline slows the reading down (backpressure). */
  start(emit: (line: SourceLine) => Promise<void> | undefined): Promise<void>;
  /** Resolves when the source has read all it will (stdin at EOF); files never finish. */
  finished(): Promise<void>;
  /** Stops reading; resolves once no more lines will be emitted. */
  stop(): Promise<void>;
  /** Writes the final checkpoints (after the pipeline made everything emitted durable) and lets go. */
  close(): Promise<void>;
  /** Prometheus samples beyond the counters (per-file lag, open files, checkpoint age). */
  gauges?(): Gauge[];
  /** What /health shows of the source: files open, and what keeps data from flowing (a pattern matching nothing). */
  status?(): SourceStatus;
}

export interface SourceStatus {
  files?: number;
  /** Problems that keep lines from being read, each in one line. */
  warnings: string[];
  /** Data is not flowing from it now (its reader fails, or it dropped data lately): the agent is degraded. */
  degraded?: boolean;
}

/** One Prometheus sample of a gauge (or a counter kept outside SourceCounters). */
export interface Gauge {
  name: string;
  help: string;
  labels: Record<string, string>;
  value: number;
}

/** What a source is built with. */
export interface SourceContext {
  name: string;
  /** The agent's state directory (checkpoints). */
  dataDir: string;
  /** Whether a transform reads the lines: if not, they go to the sinks as bytes, never decoded. */
  decoded: boolean;
  log: Logger;
  /** Counters that outlive this source (across reloads), made on first use. */
  counters<C extends SourceCounters>(make: () => C): C;
  /**
   * Hands what the sinks downstream have batched to their queues at once, rather than at the batch timeout:
   * for a source whose sender waits for its lines to be queued (the relay answers once they are).
   */
  flush(): Promise<void>;
}

/** A source as the config names it (`type: file`). */
export interface SourceSpec<Settings = unknown, Keys extends OptionSpecs = OptionSpecs> extends ComponentSpec<
  Settings,
  Keys
> {
  create(settings: Settings, ctx: SourceContext): Source;
  /** At most one source of this type in a config (standard input). */
  readonly single?: boolean;
  /** The metrics dataset its points go to (host_metrics'): no sink may keep it as its own (events) dataset. */
  metricsDataset?(settings: Settings): string;
}

/** Every source cuts lines at a size. */
export const MAX_LINE_BYTES_OPTION = bytes('1MiB').doc('longer lines are cut and marked `truncated: true`');
