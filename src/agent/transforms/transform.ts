/**
 * Transforms sit between sources and sinks: parse a line into an event, join multiline events, enrich.
 * They share this one interface, and the config names them (`type: parse`), as in Vector.
 */
import type { ComponentSpec } from '../../config/registry.js';
import type { LogEvent } from '../parsers/index.js';
import type { SourceLine } from '../sources/source.js';

/** A line on its way through the pipeline: its text and origin, and the event once parsed. */
export interface Envelope extends SourceLine {
  event?: LogEvent;
  /**
   * The event's own JSON text, while the event is exactly that text parsed plus the `extra` fields: the
   * sink then ships the text with the extra fields spliced in, instead of serialising the event again.
   * Whatever changes the event otherwise must clear it.
   */
  verbatim?: string;
  extra?: AddedField[];
}

/** A field a transform adds to events, with its JSON member text made once, not once per event. */
export interface AddedField {
  readonly key: string;
  readonly value: unknown;
  /** `,"key":value`: what is spliced into an event's verbatim text before its closing brace. */
  readonly member: string;
}

export function addedField(key: string, value: unknown): AddedField {
  return { key, value, member: `,${JSON.stringify(key)}:${JSON.stringify(value)}` };
}

/** Hands an envelope downstream; a returned promise must be awaited (backpressure), nothing means go on. */
export type Emit = (e: Envelope) => Promise<void> | undefined;

export interface Transform {
  readonly name: string;
  /** Takes one envelope; emits zero or more downstream (awaited: backpressure). */
  process(e: Envelope): Promise<void>;
  /** Emits whatever is held back (a multiline event in progress): shutdown and reload. */
  flush(): Promise<void>;
}

/** What a transform is built with: its name and where it emits to. */
export interface TransformContext {
  name: string;
  next: Emit;
}

/** A transform as the config names it (`type: parse`). */
export interface TransformSpec<Settings = unknown> extends ComponentSpec<Settings> {
  create(settings: Settings, ctx: TransformContext): Transform;
}

/** The event of an envelope not parsed by any parse transform: the line as `message`. */
export function eventOf(e: Envelope): LogEvent {
  if (!e.event) e.event = e.truncated ? { message: e.text, truncated: true } : { message: e.text };
  return e.event;
}
