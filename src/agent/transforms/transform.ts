/**
 * Transforms sit between sources and sinks: parse a line into an event, join multiline events, enrich.
 * They share this one interface, and the config names them (`type: parse`), as in Vector.
 */
import type { Options, OptionSpecs } from '../../config/options.js';
import { AplError } from '../../apl/errors.js';
import type { ComponentSpec } from '../../config/registry.js';
import { Event, FieldsOnRead } from '../event.js';
import { isFlatJsonObject } from '../../util/flat-json.js';
import type { LogEvent } from '../parsers/parser.js';
import type { SourceLine } from '../sources/source.js';
import { NowAndThen } from '../../util/now-and-then.js';

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
  /**
   * Takes one envelope; emits zero or more downstream (awaited: backpressure). A dropped one goes on.
   * Returns a promise only when the caller must wait, as an Emit does: a line that waits for nothing
   * takes no turn of the microtask queue at each transform.
   */
  process(e: Envelope): Promise<void> | undefined;
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

/**
 * A transform that keeps or drops each event (apl, sample, throttle, dedupe): a dropped one goes on as its
 * place, counted by the reason the transform gives.
 */
export abstract class FilterTransform implements Transform {
  constructor(
    readonly name: string,
    protected readonly next: Emit,
    readonly counters: TransformCounters,
    private readonly reason: string,
  ) {}

  /** Whether the event goes on (it may change it). */
  protected abstract keeps(e: Envelope): boolean;

  process(e: Envelope): Promise<void> | undefined {
    if (e.dropped) return this.next(e);
    this.counters.eventsIn++;
    let keeps = true;
    try {
      keeps = this.keeps(e);
    } catch {
      // An event it cannot judge (a key nested past the stack) goes on, counted: never lost, never thrown
      // past the transform, where the line after it would be acknowledged without it.
      this.counters.errors++;
    }
    if (keeps) {
      this.counters.eventsOut++;
      return this.next(e);
    }
    countDrop(this.counters, this.reason);
    return this.next(placeOf(e));
  }

  async flush(): Promise<void> {}
}

/**
 * Hands each envelope to its emitter, in order, waiting only where an emitter asks to: nothing is returned
 * when none did.
 */
export function emitInOrder(
  emits: readonly Emit[],
  envelopes: readonly Envelope[],
  from = 0,
): Promise<void> | undefined {
  for (let i = from; i < emits.length; i++) {
    const wait = emits[i]!(envelopes[i]!);
    if (wait) return wait.then(() => emitInOrder(emits, envelopes, i + 1));
  }
  return undefined;
}

/** What goes on for an event a transform dropped: its place in the stream, without the event. */
export function placeOf(e: Envelope): Envelope {
  // Every key written out, in one order: places are made once per path a line does not take, and
  // objects of one shape are cheap to make and to read (a spread made each of a different shape).
  const place: { [K in keyof Required<Envelope>]: Envelope[K] } = {
    text: e.text,
    raw: e.raw,
    lines: e.lines,
    truncated: e.truncated,
    structured: e.structured,
    dataset: e.dataset,
    params: e.params,
    stream: e.stream,
    offset: e.offset,
    generation: e.generation,
    route: e.route,
    event: undefined,
    dropped: true,
  };
  return place;
}

/** Counts an event a transform dropped on purpose, by reason (`where`, `sampled`). */
export function countDrop(c: TransformCounters, reason: string): void {
  c.dropped[reason] = (c.dropped[reason] ?? 0) + 1;
}

/**
 * What a transform does with an expression that failed on an event (it gave null): counted, and said at
 * most now and then with the last error, never once per event.
 */
export function expressionFailures(
  transform: string,
  counters: TransformCounters,
  log: { warn(o: object, m: string): void },
): (err: unknown) => void {
  const failures = new NowAndThen();
  return (err) => {
    counters.errors++;
    failures.hit((count) =>
      log.warn(
        { transform, err: (err as Error)?.message ?? String(err), count },
        'apl expressions failed on events and gave null (the last error shown)',
      ),
    );
  };
}

/**
 * Compiles a key's APL at config load (a query, a condition), refusing a bad one with the key path and
 * the line and column in its text.
 */
export function compiledAt<T>(o: Options, key: string, compile: () => T): T {
  try {
    return compile();
  } catch (err) {
    if (err instanceof AplError) return o.fail(key, err.message);
    if (err instanceof RangeError) return o.fail(key, `too large to compile (${err.message})`);
    throw err;
  }
}

/** What a transform is built with: its name and where it emits to. */
export interface TransformContext {
  name: string;
  next: Emit;
  /**
   * Where a transform with named outputs (a route) emits to one of them. Each output must be handed an
   * envelope of its own (the output marks it with its path), a dropped place where the event goes elsewhere.
   */
  output(name: string): Emit;
  /** Whether anything reads one of its named outputs (what goes out of one nobody reads is dropped). */
  isRead(output: string): boolean;
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
  /**
   * It joins lines of a stream (multiline, a parser of partial container lines): it must not read the
   * output of a route, which may send the pieces of one event down different paths.
   */
  joinsLines?(settings: Settings): boolean;
  /** The transform's named outputs (`errors`, `_unmatched`), which readers name as `<transform>.<output>`. */
  outputs?(settings: Settings): string[];
  /** What the transform will do, one line each, for `ferry validate` (an apl pipeline's operators as bound). */
  describe?(settings: Settings): string[];
}

/** Whether sources' JSON object lines are made into events from their text (see FieldsOnRead). */
const structuredOnRead = new FieldsOnRead();

/** The event of a source's JSON object line, with its text kept; undefined if it is not one after all. */
function structured(text: string): Event | undefined {
  if (structuredOnRead.fromText()) {
    if (isFlatJsonObject(text)) return Event.ofText(text, structuredOnRead);
    structuredOnRead.noteFailed();
  }
  try {
    const fields = JSON.parse(text) as unknown;
    return fields && typeof fields === 'object' && !Array.isArray(fields)
      ? Event.of(fields as LogEvent, text)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The event of an envelope not parsed by any parse transform: the line as `message`. */
export function eventOf(e: Envelope): Event {
  e.event ??=
    (e.structured && structured(e.text)) ||
    Event.of(e.truncated ? { message: e.text, truncated: true } : { message: e.text });
  return e.event;
}
