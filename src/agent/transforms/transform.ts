/**
 * Transforms sit between sources and sinks: parse a line into an event, join multiline events, enrich.
 * They share this one interface, and the config names them (`type: parse`), as in Vector.
 */
import type { OptionSpecs } from '../../config/options.js';
import type { ComponentSpec } from '../../config/registry.js';
import { Event } from '../event.js';
import type { LogEvent } from '../parsers/parser.js';
import type { SourceLine } from '../sources/source.js';

/** A line on its way through the pipeline: its text and origin, and the event once made. */
export interface Envelope extends SourceLine {
  event?: Event;
  /**
   * A transform dropped the event (`where`): what goes on is its place in the stream, so that the sinks
   * acknowledge the line in order with the others, as if delivered. Every transform passes it on (one that
   * holds lines back lets them go first, or acknowledges no further than them); sinks ship nothing for it.
   */
  dropped?: true;
}

/** Hands an envelope downstream; a returned promise must be awaited (backpressure), nothing means go on. */
export type Emit = (e: Envelope) => Promise<void> | undefined;

export interface Transform {
  readonly name: string;
  /** Takes one envelope; emits zero or more downstream (awaited: backpressure). A dropped one goes on. */
  process(e: Envelope): Promise<void>;
  /** Emits whatever is held back (a multiline event in progress): shutdown and reload. */
  flush(): Promise<void>;
  /** Events in and out, and those dropped on purpose by reason (`where`), for /metrics. */
  readonly counters?: TransformCounters;
}

export interface TransformCounters {
  eventsIn: number;
  eventsOut: number;
  dropped: Record<string, number>;
  /** Expressions that failed on an event (each gave null; the event went on). */
  errors: number;
}

export function newTransformCounters(): TransformCounters {
  return { eventsIn: 0, eventsOut: 0, dropped: {}, errors: 0 };
}

/** What a transform is built with: its name and where it emits to. */
export interface TransformContext {
  name: string;
  next: Emit;
  /** Counters that outlive this transform (across reloads), made on first use. */
  counters<C extends object>(make: () => C): C;
  /** Where it says what goes wrong with events (never once per event). */
  log: { warn(o: object, m: string): void };
}

/** A transform as the config names it (`type: parse`). */
export interface TransformSpec<Settings = unknown, Keys extends OptionSpecs = OptionSpecs> extends ComponentSpec<
  Settings,
  Keys
> {
  create(settings: Settings, ctx: TransformContext): Transform;
  /** What the transform will do, one line each, for `ferry validate` (an apl pipeline's operators as bound). */
  describe?(settings: Settings): string[];
}

/** The event of an envelope not parsed by any parse transform: the line as `message`. */
/** The event of a source's JSON object line, with its text kept; undefined if it is not one after all. */
function structured(text: string): Event | undefined {
  try {
    const fields = JSON.parse(text) as unknown;
    return fields && typeof fields === 'object' && !Array.isArray(fields)
      ? Event.of(fields as LogEvent, text)
      : undefined;
  } catch {
    return undefined;
  }
}

export function eventOf(e: Envelope): Event {
  e.event ??=
    (e.structured && structured(e.text)) ||
    Event.of(e.truncated ? { message: e.text, truncated: true } : { message: e.text });
  return e.event;
}
