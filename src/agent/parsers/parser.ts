/**
 * Parsers turn a line into an event. They share this one interface, and the config names them
 * (`parser: {type: json}`), as in Vector or the OpenTelemetry Collector. Parsing is pure except for the
 * container formats, which join partial lines and so keep state per stream: make one parser per source.
 */
import type { OptionSpecs } from '../../config/options.js';
import type { ComponentSpec } from '../../config/registry.js';

export type LogEvent = Record<string, unknown>;

export interface Parser {
  /** The event of a line, or undefined while a partial line waits for its end (docker, cri). */
  parse(line: string): LogEvent | undefined;
  /** Whether a partial line waits for its end (its offset must not be acknowledged meanwhile). */
  holding?(): boolean;
  /**
   * Whether the line is a JSON object's text whose event `parse` gives as JSON.parse reads it: the event may
   * then be made from the text and its fields parsed only when read (Event.ofText).
   */
  objectText?(line: string): boolean;
}

/** The largest line a container parser joins from partial lines; the rest is cut and marked. */
export const MAX_JOINED_BYTES = 1024 * 1024;

/** A parser as the config names it (`parser: json` on a parse transform, `--parser` of `ferry pipe`). */
export interface ParserSpec<Settings = unknown, Keys extends OptionSpecs = OptionSpecs> extends ComponentSpec<
  Settings,
  Keys
> {
  /** A new parser, with its own partial-line state. */
  create(settings: Settings): Parser;
  /** Its events are the line's JSON text parsed, nothing added: the sink may ship the text itself. */
  readonly keepsText?: boolean;
}
