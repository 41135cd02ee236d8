/**
 * The `sample` transform: keeps one event in `rate`. With a `key` field, the choice is the key's, not the
 * event's: every event of one trace or request is kept or dropped together, on every agent alike (a hash
 * of the key's value). Events matching the `keep` condition are never sampled out. An event sampled out
 * goes on as its place, so its line is acknowledged as if delivered.
 */
import { compileEventCondition, describeEventCondition } from '../../apl/js/pipeline.js';
import { int, str, type OptionSpecs } from '../../config/options.js';
import { fieldReader, keyText, type FieldReader } from './field-path.js';
import {
  compiledAt,
  eventOf,
  expressionFailures,
  FilterTransform,
  newTransformCounters,
  type Emit,
  type Envelope,
  type TransformContext,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';

interface SampleConfig {
  rate: number;
  key?: string;
  keep?: string;
}

export class SampleTransform extends FilterTransform {
  private readonly key: FieldReader | undefined;
  private readonly keep: ((data: Readonly<Record<string, unknown>>) => boolean) | undefined;
  /** Events without a key are kept one in `rate` by count, as they come. */
  private seen = 0;

  constructor(
    name: string,
    private readonly cfg: SampleConfig,
    next: Emit,
    log: TransformContext['log'],
    counters: TransformCounters = newTransformCounters(),
  ) {
    super(name, next, counters, 'sampled');
    this.key = cfg.key === undefined ? undefined : fieldReader(cfg.key);
    this.keep =
      cfg.keep === undefined ? undefined : compileEventCondition(cfg.keep, expressionFailures(name, counters, log));
  }

  protected keeps(e: Envelope): boolean {
    const { rate } = this.cfg;
    if (rate === 1) return true;
    if (!this.key && !this.keep) return this.seen++ % rate === 0;
    const data = eventOf(e).data;
    if (this.keep?.(data)) return true;
    const key = this.key ? keyText(this.key(data)) : undefined;
    if (key === undefined) return this.seen++ % rate === 0;
    return hashOf(key) % rate === 0;
  }
}

/**
 * A 32-bit hash of a key (FNV-1a over its UTF-16 units, then mixed so that its low bits, which the rate's
 * remainder reads, depend on every unit). The same on every agent and every run: a trace sampled on one
 * host is sampled on all.
 */
export function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const SAMPLE_OPTIONS = {
  rate: int(undefined, { min: 1, max: 1_000_000_000 }).required().doc('keeps one event in `rate` (`10`: a tenth)'),
  key: str(undefined, { minLength: 1 })
    .doc(
      'a field whose value decides for every event that has it (`trace_id`: a trace is kept or dropped whole); a dotted name reads nested objects too',
    )
    .shown('none: by count'),
  keep: str(undefined, { minLength: 1 })
    .doc("an APL condition for events never sampled out (`level == 'error'`)")
    .shown('none'),
} satisfies OptionSpecs;

export const sampleTransform: TransformSpec<SampleConfig, typeof SAMPLE_OPTIONS> = {
  type: 'sample',
  summary: 'keeps one event in `rate`, by count or by the hash of a key field; a `keep` condition is never sampled out',
  options: SAMPLE_OPTIONS,
  configure(v, o) {
    const keep = v.keep;
    if (keep !== undefined) compiledAt(o, 'keep', () => compileEventCondition(keep));
    return { rate: v.rate, key: v.key, keep };
  },
  describe: (s) => [
    `keeps 1 in ${s.rate}${s.key ? ` by the hash of ${s.key}` : ''}`,
    ...(s.keep ? [`keeps every event where ${describeEventCondition(s.keep)}`] : []),
  ],
  create: (s, ctx) => new SampleTransform(ctx.name, s, ctx.next, ctx.log, ctx.counters(newTransformCounters)),
};
