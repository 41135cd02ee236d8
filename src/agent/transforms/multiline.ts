/**
 * Joins the lines of one event written over several lines (stack traces) before parsing: either a line
 * matching `start` begins a new event and the others join it, or a line matching `continuation` joins
 * the previous one and the others begin new events. A pending event is emitted after `timeoutMs` without
 * a new line, so the last trace of a quiet file is not held back. An event longer than `maxLines` or
 * `maxBytes` is emitted as it is and the rest starts over (nothing is dropped).
 */
import { bytes, duration, int, oneOf, readOptions, regex, type OptionSpecs } from '../../config/options.js';
import {
  newTransformCounters,
  type Emit,
  type Envelope,
  type Transform,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';

export interface MultilineConfig {
  start?: string;
  continuation?: string;
  preset?: keyof typeof PRESETS;
  timeoutMs?: number;
  maxLines?: number;
  maxBytes?: number;
}

/** Continuation patterns for common stack traces. */
export const PRESETS = {
  // "\tat com.x.Y.z(Y.java:10)", "\t... 12 more", "Caused by: …", "\tSuppressed: …"
  java: '^(?:\\s+at |\\s+\\.\\.\\. \\d+ (?:more|common frames omitted)|Caused by: |\\s+Suppressed: )',
  // indented frames and the final "SomeError: message" line of a traceback
  python:
    '^(?:\\s+|[A-Za-z_][\\w.]*(?:Error|Exception|Warning|Exit|Interrupt)(?::|$)|During handling of the above exception|The above exception was the direct cause)',
  // goroutine dumps after "panic:": indented frames, "goroutine N [state]:", "created by", blank lines
  go: '^(?:\\s+|goroutine \\d+ \\[|created by |$|[\\w./*()-]+\\(.*\\)$|\\[signal )',
} as const;

const MULTILINE_OPTIONS = {
  preset: oneOf(Object.keys(PRESETS) as (keyof typeof PRESETS)[]).doc(
    `continuation lines of ${Object.keys(PRESETS)
      .map((p) => `\`${p}\``)
      .join(', ')} stack traces`,
  ),
  start: regex().doc('a line matching it begins an event; the others join it'),
  continuation: regex().doc('a line matching it joins the previous one; the others begin events'),
  timeout: duration('1s').doc('a pending event is emitted after this long without a new line'),
  max_lines: int(500, { min: 1 }).doc('a longer event is emitted as it is and the rest starts over'),
  max_bytes: bytes('1MiB').doc('likewise, in bytes'),
} satisfies OptionSpecs;

/** The limits unless configured (a trace's lines come within a second, and a trace is not a book), as declared. */
const DEFAULTS = readOptions(MULTILINE_OPTIONS, {}, 'multiline');

/** `M`: what travels with each line (its source position); an event carries that of its last line. */
export class Multiline<M = undefined> {
  private readonly start?: RegExp;
  private readonly continuation?: RegExp;
  private readonly timeoutMs: number;
  private readonly maxLines: number;
  private readonly maxBytes: number;
  private lines: string[] = [];
  private lastMeta: M | undefined;
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    cfg: MultilineConfig,
    private readonly emit: (text: string, meta: M) => Promise<void>,
  ) {
    const cont = cfg.continuation ?? (cfg.preset ? PRESETS[cfg.preset] : undefined);
    if (!cfg.start && !cont)
      throw new Error('multiline needs a start or continuation pattern, or a preset (java, python, go)');
    try {
      if (cfg.start) this.start = new RegExp(cfg.start.replace(/\(\?P</g, '(?<'));
      else this.continuation = new RegExp(cont!.replace(/\(\?P</g, '(?<'));
    } catch (e) {
      throw new Error(`invalid multiline pattern: ${(e as Error).message}`);
    }
    this.timeoutMs = cfg.timeoutMs ?? DEFAULTS.timeout;
    this.maxLines = cfg.maxLines ?? DEFAULTS.max_lines;
    this.maxBytes = cfg.maxBytes ?? DEFAULTS.max_bytes;
  }

  /** Adds a line; resolves once any event it completes has been emitted. */
  async push(line: string, meta?: M): Promise<void> {
    await this.chain;
    const joins = this.lines.length > 0 && (this.start ? !this.start.test(line) : this.continuation!.test(line));
    if (!joins || this.lines.length >= this.maxLines || this.bytes + line.length > this.maxBytes)
      await this.emitPending();
    this.lines.push(line);
    this.lastMeta = meta;
    this.bytes += line.length + 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void (this.chain = this.chain.then(() => this.emitPending())), this.timeoutMs);
  }

  /** Emits the pending event now (end of input, shutdown). */
  async flush(): Promise<void> {
    await this.chain;
    await this.emitPending();
  }

  private async emitPending(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0) return;
    const text = this.lines.join('\n');
    this.lines = [];
    this.bytes = 0;
    await this.emit(text, this.lastMeta as M);
  }
}

/** The `multiline` transform: a Multiline joiner per stream, so lines of different files never mix. */
export class MultilineTransform implements Transform {
  private readonly joiners = new Map<string, Multiline<Envelope>>();

  constructor(
    readonly name: string,
    private readonly cfg: MultilineConfig,
    next: Emit,
    readonly counters: TransformCounters = newTransformCounters(),
  ) {
    this.next = (e) => {
      if (!e.dropped) counters.eventsOut++;
      return next(e);
    };
  }

  private readonly next: Emit;

  async process(e: Envelope): Promise<void> {
    if (!e.dropped) this.counters.eventsIn++;
    // A whole event (a relayed request's) has nothing to join, and its stream leaves no joiner behind.
    if (e.stream.whole) return this.next(e);
    // Two copies of a stream's lines (a diamond in the topology) are joined apart, each as its own stream.
    const key = e.route ? `${e.stream.id}\u0000${e.route}` : e.stream.id;
    let m = this.joiners.get(key);
    if (!m) {
      m = new Multiline<Envelope>(this.cfg, async (text, last) => this.next({ ...last, text, event: undefined }));
      this.joiners.set(key, m);
    }
    // A cut line is not matched against patterns: it closes what is pending and goes on alone; so does a
    // dropped one (acknowledged, it would pass the lines pending before it).
    if (e.truncated || e.dropped) {
      await m.flush();
      await this.next(e);
    } else await m.push(e.text, e);
  }

  async flush(): Promise<void> {
    for (const m of this.joiners.values()) await m.flush();
  }
}

export const multilineTransform: TransformSpec<MultilineConfig, typeof MULTILINE_OPTIONS> = {
  type: 'multiline',
  summary: 'joins the lines of one event (stack traces) per file, before parsing',
  options: MULTILINE_OPTIONS,
  configure(v, o) {
    const set = (['preset', 'start', 'continuation'] as const).filter((k) => v[k] !== undefined);
    if (set.length !== 1)
      o.fail(
        undefined,
        `a multiline transform takes exactly one of preset, start and continuation${set.length ? ` (got ${set.join(', ')})` : ''}`,
      );
    return {
      preset: v.preset,
      start: v.start,
      continuation: v.continuation,
      timeoutMs: v.timeout,
      maxLines: v.max_lines,
      maxBytes: v.max_bytes,
    };
  },
  joinsLines: () => true,
  create: (s, ctx) => new MultilineTransform(ctx.name, s, ctx.next, ctx.counters(newTransformCounters)),
};
