/**
 * The `throttle` transform: at most `events_per_second` events per second for each value of a key field
 * (one budget for all events without `key`), the excess dropped and counted. Each key has a bucket of a
 * second's events that refills at the rate, so a quiet key may burst up to a second's worth. Keys are
 * bounded (`max_keys`): buckets full again are forgotten, and events of keys past the bound share one
 * bucket rather than grow the agent's memory.
 */
import { int, str, type OptionSpecs } from '../../config/options.js';
import { fieldReader, keptKey, keyText, type FieldReader } from './field-path.js';
import {
  eventOf,
  FilterTransform,
  newTransformCounters,
  type Emit,
  type Envelope,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';

interface ThrottleConfig {
  eventsPerSecond: number;
  key?: string;
  maxKeys: number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms). */
  at: number;
}

/** Token buckets by key, bounded in number. Pure but for the clock it is handed. */
export class Buckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly overflow: Bucket;
  private lastSweep = 0;

  constructor(
    private readonly perSecond: number,
    private readonly maxKeys: number,
  ) {
    this.overflow = { tokens: perSecond, at: 0 };
  }

  get size(): number {
    return this.buckets.size;
  }

  /** Whether the key's bucket has a token now (taking none). */
  ready(key: string, now: number): boolean {
    const b = this.buckets.get(key) ?? (this.buckets.size < this.maxKeys ? undefined : this.overflow);
    return b === undefined || b.tokens + ((now - b.at) / 1000) * this.perSecond >= 1;
  }

  /** Takes one event's token from the key's bucket; false when it has none left. */
  take(key: string, now: number): boolean {
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxKeys) this.sweep(now);
      if (this.buckets.size >= this.maxKeys) b = this.overflow;
      else this.buckets.set(key, (b = { tokens: this.perSecond, at: now }));
    }
    b.tokens = Math.min(this.perSecond, b.tokens + ((now - b.at) / 1000) * this.perSecond);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens--;
    return true;
  }

  /** Forgets the buckets that are full again (a new one is the same); at most once a second, the walk is O(keys). */
  private sweep(now: number): void {
    if (now - this.lastSweep < 1000) return;
    this.lastSweep = now;
    for (const [key, b] of this.buckets)
      if (b.tokens + ((now - b.at) / 1000) * this.perSecond >= this.perSecond) this.buckets.delete(key);
  }
}

export class ThrottleTransform extends FilterTransform {
  private readonly key: FieldReader | undefined;
  private readonly buckets: Buckets;

  constructor(
    name: string,
    cfg: ThrottleConfig,
    next: Emit,
    counters: TransformCounters = newTransformCounters(),
    private readonly now: () => number = () => performance.timeOrigin + performance.now(),
  ) {
    super(name, next, counters, 'throttled');
    this.key = cfg.key === undefined ? undefined : fieldReader(cfg.key);
    this.buckets = new Buckets(cfg.eventsPerSecond, cfg.maxKeys);
  }

  protected keeps(e: Envelope): boolean {
    const key = this.key ? (keyText(this.key(eventOf(e).data)) ?? '') : '';
    return this.buckets.take(keptKey(key), this.now());
  }
}

const THROTTLE_OPTIONS = {
  events_per_second: int(undefined, { min: 1 })
    .required()
    .doc("events let through per second for each key's value; a quiet key may pass a second's worth at once"),
  key: str(undefined, { minLength: 1 })
    .doc('a field whose values each get their own budget (`host.name`); a dotted name reads nested objects too')
    .shown('none: one budget'),
  max_keys: int(10_000, { min: 1 }).doc(
    "keys with a budget at once; events of further keys share one budget until some key's is full again",
  ),
} satisfies OptionSpecs;

export const throttleTransform: TransformSpec<ThrottleConfig, typeof THROTTLE_OPTIONS> = {
  type: 'throttle',
  summary: 'lets through at most `events_per_second` per key, dropping and counting the excess',
  options: THROTTLE_OPTIONS,
  configure: (v) => ({ eventsPerSecond: v.events_per_second, key: v.key, maxKeys: v.max_keys }),
  describe: (s) => [`at most ${s.eventsPerSecond} events a second${s.key ? ` for each ${s.key}` : ''}`],
  create: (s, ctx) => new ThrottleTransform(ctx.name, s, ctx.next, ctx.counters(newTransformCounters)),
};
