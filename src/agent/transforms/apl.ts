/**
 * The `apl` transform: an APL pipeline of operators that work event by event (`where`, `extend`,
 * `project`…), compiled once at config load into JavaScript closures (src/apl/js/), with the meaning the
 * store's queries give them. An event a `where` drops goes on as its place in the stream only, so its line is
 * acknowledged like a delivered one (a file's checkpoint moves past it, a relayed request is answered).
 */
import { AplError } from '../../apl/errors.js';
import { compileEventPipeline, type EventPipeline } from '../../apl/js/pipeline.js';
import { str, type OptionSpecs } from '../../config/options.js';
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
  constructor(
    readonly name: string,
    private readonly pipeline: EventPipeline,
    private readonly next: Emit,
    readonly counters: TransformCounters = newTransformCounters(),
  ) {}

  async process(e: Envelope): Promise<void> {
    if (e.dropped) return this.next(e);
    this.counters.eventsIn++;
    if (this.pipeline.run(eventOf(e))) {
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

export const aplTransform: TransformSpec<EventPipeline, typeof APL_OPTIONS> = {
  type: 'apl',
  summary: 'filters and reshapes events with APL (where, extend, project…), as queries do, one event at a time',
  options: APL_OPTIONS,
  configure(v, o) {
    try {
      return compileEventPipeline(v.query);
    } catch (err) {
      if (err instanceof AplError) return o.fail('query', err.message);
      throw err;
    }
  },
  describe: (pipeline) => pipeline.describe(),
  create: (pipeline, ctx) => new AplTransform(ctx.name, pipeline, ctx.next, ctx.counters(newTransformCounters)),
};
