/**
 * The `dedupe` transform: drops an event whose `fields` all hold what they held in an event it let through
 * less than `window` ago, and counts it. One event per window goes through for each set of values (a
 * repeat does not extend the window). What it remembers is bounded: at most `max_entries` sets of values,
 * each kept as a digest when long, the oldest forgotten first.
 */
import { duration, int, strings, type OptionSpecs } from '../../config/options.js';
import { fieldReader, keptKey, type FieldReader } from './field-path.js';
import {
  eventOf,
  FilterTransform,
  newTransformCounters,
  type Emit,
  type Envelope,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';

interface DedupeConfig {
  fields: string[];
  windowMs: number;
  maxEntries: number;
}

/** When each set of values was last let through, oldest first. Pure but for the clock it is handed. */
export class SeenWithin {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.seen.size;
  }

  /** True when `key` was let through less than the window ago; otherwise it is let through now. */
  repeated(key: string, now: number): boolean {
    const k = keptKey(key);
    const at = this.seen.get(k);
    if (at !== undefined && now - at < this.windowMs) return true;
    // Re-inserted, so the map stays in the order of time and the expired are at its front.
    if (at !== undefined) this.seen.delete(k);
    this.seen.set(k, now);
    for (const [old, t] of this.seen) {
      if (this.seen.size <= this.maxEntries && now - t < this.windowMs) break;
      this.seen.delete(old);
    }
    return false;
  }
}

export class DedupeTransform extends FilterTransform {
  private readonly fields: FieldReader[];
  private readonly seen: SeenWithin;

  constructor(
    name: string,
    cfg: DedupeConfig,
    next: Emit,
    counters: TransformCounters = newTransformCounters(),
    private readonly now: () => number = () => performance.timeOrigin + performance.now(),
  ) {
    super(name, next, counters, 'duplicate');
    this.fields = cfg.fields.map(fieldReader);
    this.seen = new SeenWithin(cfg.windowMs, cfg.maxEntries);
  }

  protected keeps(e: Envelope): boolean {
    const data = eventOf(e).data;
    // A field the event lacks is null: events that lack it alike are repeats of each other.
    return !this.seen.repeated(JSON.stringify(this.fields.map((f) => f(data) ?? null)), this.now());
  }
}

const DEDUPE_OPTIONS = {
  fields: strings()
    .required()
    .check((v) => (v.length === 0 ? 'name at least one field' : undefined))
    .doc(
      'the fields whose values make events repeats of each other (`[message, host.name]`); a dotted name reads nested objects too',
    ),
  window: duration('10s').doc('how long after an event its repeats are dropped'),
  max_entries: int(10_000, { min: 1 }).doc('sets of values remembered at once; the oldest are forgotten first'),
} satisfies OptionSpecs;

export const dedupeTransform: TransformSpec<DedupeConfig, typeof DEDUPE_OPTIONS> = {
  type: 'dedupe',
  summary: 'drops repeats of the same field values within a window, and counts them',
  options: DEDUPE_OPTIONS,
  configure: (v) => ({ fields: v.fields, windowMs: v.window, maxEntries: v.max_entries }),
  describe: (s) => [`drops repeats of ${s.fields.join(', ')} within ${s.windowMs} ms`],
  create: (s, ctx) => new DedupeTransform(ctx.name, s, ctx.next, ctx.counters(newTransformCounters)),
};
