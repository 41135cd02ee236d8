/** The `parse` transform: turns each line into an event with the configured parser, one per stream. */
import { oneOf, type OptionSpecs } from '../../config/options.js';
import { configureComponent, requiredKeys } from '../../config/registry.js';
import { Event, FieldsOnRead } from '../event.js';
import { parsers, type Parser, type ParserSpec } from '../parsers/index.js';
import {
  newTransformCounters,
  type Emit,
  type Envelope,
  type Transform,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';
import type { LogEvent } from '../parsers/parser.js';

/** A parser and its settings, as configured. */
export interface ParseSettings {
  parser: ParserSpec;
  settings: unknown;
}

/** A stream's parser, where its last line ended, and where the partial line it holds began. */
interface StreamParser {
  parser: Parser;
  generation?: number;
  lastEnd?: number;
  heldFrom?: number;
}

export class ParseTransform implements Transform {
  // Container parsers join partial lines, so each stream (file) needs its own parser state.
  private readonly parsers = new Map<string, StreamParser>();

  constructor(
    readonly name: string,
    private readonly cfg: ParseSettings,
    private readonly next: Emit,
    readonly counters: TransformCounters = newTransformCounters(),
  ) {}

  /** The parser of whole events (a relayed request's), which hold no partial line: one for all such streams. */
  private wholeParser: Parser | undefined;
  /** Whether events are made from their JSON text, parsed when read (see FieldsOnRead). */
  private readonly onRead = new FieldsOnRead();

  process(e: Envelope): Promise<void> | undefined {
    if (!e.dropped) this.counters.eventsIn++;
    if (e.stream.whole) {
      if (e.dropped) return this.next(e);
      this.wholeParser ??= this.cfg.parser.create(this.cfg.settings);
      return this.emitParsed(e, this.fromText(this.wholeParser, e) ?? this.wholeParser.parse(e.text));
    }
    // A parser may hold a partial line: each copy of a stream's lines (a diamond) has its own.
    const key = e.route ? `${e.stream.id}\u0000${e.route}` : e.stream.id;
    let st = this.parsers.get(key);
    if (!st) this.parsers.set(key, (st = { parser: this.cfg.parser.create(this.cfg.settings) }));
    // A truncated file starts its offsets over.
    if (st.generation !== e.generation) this.parsers.set(key, (st = { parser: st.parser, generation: e.generation }));
    if (e.dropped) {
      // A line dropped before this transform: acknowledged no further than a partial line held.
      st.lastEnd = e.offset;
      if (st.heldFrom !== undefined && st.parser.holding?.()) e.offset = Math.min(e.offset, st.heldFrom);
      return this.next(e);
    }
    // Where this line began: the end of the one before (the first one seen: its own length back).
    const start = st.lastEnd ?? Math.max(0, e.offset - Buffer.byteLength(e.text) - 1);
    st.lastEnd = e.offset;
    const event = this.fromText(st.parser, e) ?? st.parser.parse(e.text);
    if (event === undefined) {
      // A partial line, held until its end arrives: no line after it is acknowledged past its start.
      st.heldFrom ??= start;
      return;
    }
    if (st.heldFrom !== undefined) {
      // Another stream's line of the file (stderr beside a held stdout part) goes on, acknowledging no
      // further than the held part's start, until nothing is held.
      if (st.parser.holding?.()) e.offset = Math.min(e.offset, st.heldFrom);
      else st.heldFrom = undefined;
    }
    return this.emitParsed(e, event);
  }

  /** The event made from the line's JSON text, its fields parsed when read, where the parser says it may be. */
  private fromText(parser: Parser, e: Envelope): Event | undefined {
    if (e.truncated || !parser.objectText || !this.onRead.fromText()) return undefined;
    if (parser.objectText(e.text)) return Event.ofText(e.text, this.onRead);
    this.onRead.noteFailed();
    return undefined;
  }

  private emitParsed(e: Envelope, event: LogEvent | Event | undefined): Promise<void> | undefined {
    this.counters.eventsOut++;
    // A whole event that parses to nothing (a container parser's partial line) goes on as it is.
    if (event === undefined) return this.next(e);
    if (event instanceof Event) {
      e.event = event;
      return this.next(e);
    }
    if (e.truncated) event.truncated = true;
    // A JSON line parsed as it is keeps its text, so the sink need not serialise it again.
    e.event = Event.of(
      event,
      this.cfg.parser.keepsText && !e.truncated && event.message !== e.text ? e.text : undefined,
    );
    return this.next(e);
  }

  async flush(): Promise<void> {
    // Nothing to emit: a partial container line without its end is read again after a restart.
  }
}

/** The parser's own keys sit beside `parser` on the transform (required by their parser only). */
const parserOptions: OptionSpecs = Object.fromEntries(
  parsers.specs.flatMap((p) =>
    Object.entries(p.options).map(([k, o]) => [k, o.optional().doc(`with parser \`${p.type}\`: ${o.description}`)]),
  ),
);

const PARSE_OPTIONS = {
  parser: oneOf(parsers.types)
    .required()
    .doc(`one of ${parsers.specs.map((p) => `\`${p.type}\` (${p.summary})`).join('; ')}`),
  ...parserOptions,
};

export const parseTransform: TransformSpec<ParseSettings, typeof PARSE_OPTIONS> = {
  type: 'parse',
  summary: 'turns each line into an event with a parser, one parser state per file',
  options: PARSE_OPTIONS,
  configure(v, o) {
    const parser = parsers.get(v.parser);
    for (const k of Object.keys(parserOptions)) {
      if (o.has(k) && !(k in parser.options)) {
        o.fail(
          k,
          `only the ${parsers.specs
            .filter((p) => k in p.options)
            .map((p) => p.type)
            .join(', ')} parser takes ${k}`,
        );
      }
    }
    for (const k of requiredKeys(parser.options))
      if (!o.has(k)) o.fail(undefined, `the ${parser.type} parser needs ${k}`);
    return { parser, settings: configureComponent(parser, o) };
  },
  // A container parser holds a partial line until its end comes.
  joinsLines: (s) => s.parser.create(s.settings).holding !== undefined,
  create: (s, ctx) => new ParseTransform(ctx.name, s, ctx.next, ctx.counters(newTransformCounters)),
};
