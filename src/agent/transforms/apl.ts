/**
 * The `apl` transform: an APL pipeline of operators that work event by event (`where`, `extend`,
 * `project`…), compiled once at config load into JavaScript closures (src/apl/js/), with the meaning the
 * store's queries give them. An event a `where` drops goes on as its place in the stream only, so its line is
 * acknowledged like a delivered one (a file's checkpoint moves past it, a relayed request is answered).
 */
import { compileEventPipeline, type EventPipeline } from '../../apl/js/pipeline.js';
import { str, type OptionSpecs } from '../../config/options.js';
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

export class AplTransform extends FilterTransform {
  private readonly pipeline: EventPipeline;
  private readonly failed: (err: unknown) => void;

  constructor(
    name: string,
    query: string,
    next: Emit,
    log: TransformContext['log'],
    counters: TransformCounters = newTransformCounters(),
  ) {
    super(name, next, counters, 'where');
    this.failed = expressionFailures(name, counters, log);
    this.pipeline = compileEventPipeline(query, this.failed);
  }

  protected keeps(e: Envelope): boolean {
    try {
      return this.pipeline.run(eventOf(e));
    } catch (err) {
      // Past the expressions' own guard: the event goes on as far as the pipeline made it, never lost
      // (redact makes every field it could not mask null first).
      this.failed(err);
      return true;
    }
  }
}

const APL_OPTIONS = {
  query: str()
    .required()
    .doc(
      'operators that work on one event at a time, separated by `|`: `where`, `extend`, `extend-valid`, `project`, `project-away`, `project-keep`, `project-rename`, `project-reorder`, `parse`, `parse-where`, `parse-kv`, `redact`',
    ),
} satisfies OptionSpecs;

export const aplTransform: TransformSpec<string, typeof APL_OPTIONS> = {
  type: 'apl',
  summary: 'filters and reshapes events with APL (where, extend, project…), as queries do, one event at a time',
  options: APL_OPTIONS,
  configure(v, o) {
    // Compiled here to refuse a bad query at load, naming the key; each transform compiles its own.
    compiledAt(o, 'query', () => compileEventPipeline(v.query));
    return v.query;
  },
  describe: (query) => compileEventPipeline(query).describe(),
  create: (query, ctx) => new AplTransform(ctx.name, query, ctx.next, ctx.log, ctx.counters(newTransformCounters)),
};
