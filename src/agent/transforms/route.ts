/**
 * The `route` transform: named outputs by APL condition (`routes: {errors: "status >= 500"}`), read as
 * `<transform>.<route>` by sinks and transforms, and `<transform>._unmatched` for events no condition
 * holds for. An event goes to every route whose condition holds (a copy each). Each output is a path of
 * its own: one the event does not take gets the event's place, so its line is acknowledged once every path
 * it could take has it durable or has passed it by.
 */
import { compileEventCondition, describeEventCondition } from '../../apl/js/pipeline.js';
import { value, type OptionSpecs } from '../../config/options.js';
import {
  compiledAt,
  countDrop,
  emitInOrder,
  eventOf,
  expressionFailures,
  newTransformCounters,
  placeOf,
  type Emit,
  type Envelope,
  type Transform,
  type TransformContext,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';

/** The output of the events no route's condition holds for. */
export const UNMATCHED = '_unmatched';

const ROUTE_NAME = /^[A-Za-z0-9_-]+$/;

type Routes = Record<string, string>;

export class RouteTransform implements Transform {
  /** Each route's condition, and where it goes: nowhere for an output nobody reads (no path). */
  private readonly routes: { test: (data: Readonly<Record<string, unknown>>) => boolean; emit?: Emit }[];
  private readonly unmatched: Emit | undefined;

  constructor(
    readonly name: string,
    routes: Routes,
    ctx: Pick<TransformContext, 'output' | 'isRead' | 'log'>,
    readonly counters: TransformCounters = newTransformCounters(),
  ) {
    const failed = expressionFailures(name, counters, ctx.log);
    this.routes = Object.entries(routes).map(([route, condition]) => ({
      test: compileEventCondition(condition, failed),
      emit: ctx.isRead(route) ? ctx.output(route) : undefined,
    }));
    this.unmatched = ctx.isRead(UNMATCHED) ? ctx.output(UNMATCHED) : undefined;
    this.outputs = [
      ...this.routes.flatMap((r) => (r.emit ? [r.emit] : [])),
      ...(this.unmatched ? [this.unmatched] : []),
    ];
  }

  /** Every output read, in order: the routes', then `_unmatched`'s. */
  private readonly outputs: Emit[];

  process(e: Envelope): Promise<void> | undefined {
    if (e.dropped)
      return emitInOrder(
        this.outputs,
        this.outputs.map(() => ({ ...e })),
      );
    this.counters.eventsIn++;
    const data = eventOf(e).data;
    let matched = 0;
    let taken = 0;
    // Each call its own: calls overlap at every await (two sources, a multiline flush, concurrent requests).
    const hits = new Array<boolean>(this.routes.length);
    for (let i = 0; i < this.routes.length; i++) {
      const r = this.routes[i]!;
      if ((hits[i] = r.test(data))) {
        matched++;
        if (r.emit) taken++;
      }
    }
    const toUnmatched = matched === 0 && this.unmatched !== undefined;
    if (toUnmatched) taken = 1;
    if (taken === 0) countDrop(this.counters, matched === 0 ? 'unmatched' : 'unread');
    else this.counters.eventsOut++;
    // Every path gets an envelope of its own (its output marks it with its route): a copy of the event
    // or its place, all made before the event itself goes, last, to the last path that takes it.
    const emits: Emit[] = [];
    const envelopes: Envelope[] = [];
    let last: Emit | undefined;
    for (let i = 0; i < this.routes.length; i++) {
      const emit = this.routes[i]!.emit;
      if (!emit) continue;
      if (!hits[i]) {
        emits.push(emit);
        envelopes.push(placeOf(e));
      } else if (--taken === 0) last = emit;
      else {
        emits.push(emit);
        envelopes.push({ ...e, event: e.event!.clone() });
      }
    }
    if (this.unmatched) {
      if (toUnmatched) last = this.unmatched;
      else {
        emits.push(this.unmatched);
        envelopes.push(placeOf(e));
      }
    }
    if (last) {
      emits.push(last);
      envelopes.push(e);
    }
    return emitInOrder(emits, envelopes);
  }

  async flush(): Promise<void> {}
}

const ROUTE_OPTIONS = {
  routes: value<Routes>({
    type: 'object',
    minProperties: 1,
    additionalProperties: { type: 'string', minLength: 1 },
  })
    .required()
    .doc(
      'output names and their APL conditions (`errors: "status >= 500"`); read as `<transform>.<name>`, and `<transform>._unmatched` for events no condition holds for; an event goes to every route whose condition holds',
    ),
} satisfies OptionSpecs;

export const routeTransform: TransformSpec<Routes, typeof ROUTE_OPTIONS> = {
  type: 'route',
  summary: 'sends events to named outputs by APL condition (`<name>.errors`, `<name>._unmatched`)',
  options: ROUTE_OPTIONS,
  configure(v, o) {
    for (const [route, condition] of Object.entries(v.routes)) {
      if (!ROUTE_NAME.test(route))
        o.fail(`routes.${route}`, 'a route name is letters, digits, `_` and `-` (it becomes part of an input name)');
      if (route === UNMATCHED)
        o.fail(`routes.${route}`, `${UNMATCHED} is the output of events no route matches; name the route otherwise`);
      compiledAt(o, `routes.${route}`, () => compileEventCondition(condition));
    }
    return v.routes;
  },
  outputs: (routes) => [...Object.keys(routes), UNMATCHED],
  describe: (routes) => [
    ...Object.entries(routes).map(([route, condition]) => `${route}: ${describeEventCondition(condition)}`),
    `${UNMATCHED}: no condition holds`,
  ],
  create: (routes, ctx) => new RouteTransform(ctx.name, routes, ctx, ctx.counters(newTransformCounters)),
};
