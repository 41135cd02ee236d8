/**
 * The `apl` transform: an APL pipeline of operators that work event by event (`where`, `extend`,
 * `project`…), compiled once at config load into JavaScript closures (src/apl/js/), with the meaning the
 * store's queries give them. An event a `where` drops goes on as its place in the stream only, so its line is
 * acknowledged like a delivered one (a file's checkpoint moves past it, a relayed request is answered).
 */
import { AplError } from '../../apl/errors.js';
import { compileEventPipeline, type EventPipeline } from '../../apl/js/pipeline.js';
import { str, type OptionSpecs } from '../../config/options.js';
import { NowAndThen } from '../../util/now-and-then.js';
import {
  eventOf,
  newTransformCounters,
  type Emit,
  type Envelope,
  type Transform,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';

export class AplTransform implements Transform {
  private readonly pipeline: EventPipeline;
  private readonly failures = new NowAndThen();

  constructor(
    readonly name: string,
    query: string,
    private readonly next: Emit,
    private readonly log: { warn(o: object, m: string): void },
    readonly counters: TransformCounters = newTransformCounters(),
  ) {
    this.pipeline = compileEventPipeline(query, (err) => this.failed(err));
  }

  /** An expression failed on an event (it gave null): counted, and said at most now and then. */
  private failed(err: unknown): void {
    this.counters.errors++;
    this.failures.hit((count) =>
      this.log.warn(
        { transform: this.name, err: (err as Error).message ?? String(err), count },
        'apl expressions failed on events and gave null (the last error shown)',
      ),
    );
  }

  async process(e: Envelope): Promise<void> {
    if (e.dropped) return this.next(e);
    this.counters.eventsIn++;
    let kept = true;
    try {
      kept = this.pipeline.run(eventOf(e));
    } catch (err) {
      // Past the expressions' own guard: the event goes on as far as the pipeline made it, never lost.
      this.failed(err);
    }
    if (kept) {
      this.counters.eventsOut++;
      return this.next(e);
    }
    this.counters.dropped.where = (this.counters.dropped.where ?? 0) + 1;
    return this.next({ ...e, event: undefined, dropped: true });
  }

  async flush(): Promise<void> {}
}

const APL_OPTIONS = {
  query: str()
    .required()
    .doc(
      'operators that work on one event at a time, separated by `|`: `where`, `extend`, `extend-valid`, `project`, `project-away`, `project-keep`, `project-rename`, `project-reorder`',
    ),
} satisfies OptionSpecs;

export const aplTransform: TransformSpec<string, typeof APL_OPTIONS> = {
  type: 'apl',
  summary: 'filters and reshapes events with APL (where, extend, project…), as queries do, one event at a time',
  options: APL_OPTIONS,
  configure(v, o) {
    try {
      // Compiled here to refuse a bad query at load, naming the key; each transform compiles its own.
      compileEventPipeline(v.query);
      return v.query;
    } catch (err) {
      if (err instanceof AplError) return o.fail('query', err.message);
      if (err instanceof RangeError) return o.fail('query', `the query is too large to compile (${err.message})`);
      throw err;
    }
  },
  describe: (query) => compileEventPipeline(query).describe(),
  create: (query, ctx) => new AplTransform(ctx.name, query, ctx.next, ctx.log, ctx.counters(newTransformCounters)),
};
