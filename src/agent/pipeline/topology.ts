/**
 * The agent's graph, built once from the config's names and `inputs`: sources → transforms → sinks.
 * Building it checks the wiring (unique names, inputs that exist and are not sinks, no cycles, no source
 * nobody reads); the pipeline then reads the flow order and the routes of each source's copies from it. Pure.
 */
import { ComponentError } from '../../config/options.js';

export interface Wired {
  name: string;
  inputs: readonly string[];
  /**
   * A transform's named outputs (a route's `errors`, `_unmatched`): its readers name one of them
   * (`split.errors`), never the transform itself, and each output is a path of its own.
   */
  outputs?: readonly string[];
}

type Kind = 'sources' | 'transforms' | 'sinks' | 'outputs';

/** The name readers give a transform's named output. */
export const outputName = (transform: string, output: string): string => `${transform}.${output}`;

export class Topology {
  private constructor(
    /** Transforms in the order of the flow: each after every transform it reads from. */
    readonly transformOrder: readonly string[],
    private readonly readers: ReadonlyMap<string, readonly string[]>,
    private readonly forks: ReadonlyMap<string, ReadonlyMap<number, readonly number[]>>,
    private readonly copies: ReadonlyMap<string, number>,
    private readonly transformsFed: ReadonlySet<string>,
    /** The named outputs of transforms (`split.errors`): paths through which events pass as they are. */
    private readonly outputs: ReadonlySet<string>,
  ) {}

  static of(sources: readonly { name: string }[], transforms: readonly Wired[], sinks: readonly Wired[]): Topology {
    const kinds = new Map<string, Kind>();
    for (const [kind, list] of [
      ['sources', sources],
      ['transforms', transforms],
      ['sinks', sinks],
    ] as const) {
      for (const c of list) {
        const other = kinds.get(c.name);
        if (other)
          throw new ComponentError(
            `${kind}.${c.name}`,
            `the name is already used by ${other}.${c.name}; names must be unique`,
          );
        kinds.set(c.name, kind);
      }
    }
    const readers = new Map<string, string[]>();
    // A transform with named outputs is read by its outputs, in their order; readers name the outputs.
    const ownerOf = new Map<string, string>();
    for (const t of transforms) {
      if (!t.outputs) continue;
      readers.set(t.name, []);
      for (const out of t.outputs) {
        const name = outputName(t.name, out);
        const other = kinds.get(name);
        if (other)
          throw new ComponentError(
            `${other}.${name}`,
            `the name is also the output "${out}" of transforms.${t.name}; names must be unique`,
          );
        kinds.set(name, 'outputs');
        ownerOf.set(name, t.name);
        readers.get(t.name)!.push(name);
      }
    }
    for (const [kind, list] of [
      ['transforms', transforms],
      ['sinks', sinks],
    ] as const) {
      for (const c of list) {
        c.inputs.forEach((input, i) => {
          const k = kinds.get(input);
          const at = `${kind}.${c.name}.inputs.${i}`;
          if (k === undefined) {
            const dot = input.lastIndexOf('.');
            const owner = dot > 0 ? byName(transforms, input.slice(0, dot)) : undefined;
            if (owner?.outputs)
              throw new ComponentError(
                at,
                `transforms.${owner.name} has no output "${input.slice(dot + 1)}" (its outputs: ${owner.outputs.join(', ')})`,
              );
            throw new ComponentError(at, `unknown input "${input}" (inputs name sources or transforms)`);
          }
          if (k === 'sinks') throw new ComponentError(at, `"${input}" is a sink; inputs name sources or transforms`);
          const named = byName(transforms, input)?.outputs;
          if (named)
            throw new ComponentError(
              at,
              `transforms.${input} has named outputs: read one of them (${named.map((o) => outputName(input, o)).join(', ')})`,
            );
          readers.set(input, [...(readers.get(input) ?? []), c.name]);
        });
      }
    }

    // Flow order by depth-first search from each transform to its inputs; a transform met again while
    // its own inputs are being visited closes a cycle.
    const transformNamed = new Map(transforms.map((t) => [t.name, t]));
    const state = new Map<string, 'visiting' | 'done'>();
    const order: string[] = [];
    const visit = (t: Wired, trail: string[]) => {
      if (state.get(t.name) === 'done') return;
      if (state.get(t.name) === 'visiting')
        throw new ComponentError(`transforms.${t.name}.inputs`, `a cycle: ${[...trail, t.name].join(' → ')}`);
      state.set(t.name, 'visiting');
      for (const i of t.inputs) {
        const up = transformNamed.get(ownerOf.get(i) ?? i);
        if (up) visit(up, [...trail, t.name]);
      }
      state.set(t.name, 'done');
      order.push(t.name);
    };
    for (const t of transforms) visit(t, []);

    for (const s of sources) {
      if (!readers.has(s.name))
        throw new ComponentError(
          `sources.${s.name}`,
          'nothing reads from this source: name it in the inputs of a transform or sink',
        );
    }

    const { forks, copies } = routesOf(sources, readers, new Set(sinks.map((k) => k.name)));
    const transformsFed = new Set(transforms.flatMap((t) => t.inputs));
    return new Topology(order, readers, forks, copies, transformsFed, new Set(ownerOf.keys()));
  }

  /** The transforms and sinks that read a component's output, in the config's order. */
  readersOf(name: string): readonly string[] {
    return this.readers.get(name) ?? [];
  }

  /**
   * How many copies of a source's lines reach sinks: one per path, so a sink that reads a source both
   * directly and through a transform counts twice. A line is acknowledged once every copy is durable.
   */
  copiesOf(source: string): number {
    return this.copies.get(source) ?? 0;
  }

  /**
   * The routes of the copies a component hands its readers (in readersOf's order), given the route of
   * what it received; only for a component with several readers.
   */
  forkRoutes(name: string, route: number): readonly number[] {
    const routes = this.forks.get(name)?.get(route);
    if (!routes) throw new Error(`no route ${route} through ${name}`);
    return routes;
  }

  /** The sinks a component's output reaches, directly or through transforms, in the order first met. */
  sinksOf(name: string): string[] {
    const transforms = new Set([...this.transformOrder, ...this.outputs]);
    const seen = new Set<string>();
    const visit = (n: string): string[] =>
      this.readersOf(n).flatMap((r) => {
        if (seen.has(r)) return [];
        seen.add(r);
        return transforms.has(r) ? visit(r) : [r];
      });
    return visit(name);
  }

  /** Whether a transform reads a source's lines (if not, they go to sinks undecoded). */
  isReadByTransform(source: string): boolean {
    return this.transformsFed.has(source);
  }
}

function byName(transforms: readonly Wired[], name: string): Wired | undefined {
  return transforms.find((t) => t.name === name);
}

/** Paths walked from the sources at most: a config whose paths multiply past it is refused. */
const MAX_PATH_STEPS = 100_000;

/**
 * Numbers the paths from each source to the sinks. A line keeps its route along a component with one
 * reader and gets a new one per reader at a fork, so the routes arriving at sinks tell a source's copies
 * apart. Route 0 is every source's own: routes only need to differ among one source's paths.
 */
function routesOf(
  sources: readonly { name: string }[],
  readers: ReadonlyMap<string, readonly string[]>,
  sinks: ReadonlySet<string>,
): { forks: Map<string, Map<number, number[]>>; copies: Map<string, number> } {
  const forks = new Map<string, Map<number, number[]>>();
  const copies = new Map<string, number>();
  let next = 1;
  let steps = 0;
  for (const source of sources) {
    let ends = 0;
    const walk = (name: string, route: number) => {
      if (++steps > MAX_PATH_STEPS)
        throw new ComponentError(
          `sources.${source.name}`,
          `its lines take more than ${MAX_PATH_STEPS} steps along the paths of the topology; join fewer transforms to each other`,
        );
      if (sinks.has(name)) {
        ends++;
        return;
      }
      const rs = readers.get(name) ?? [];
      if (rs.length === 1) return walk(rs[0]!, route);
      let byRoute = forks.get(name);
      if (!byRoute) forks.set(name, (byRoute = new Map()));
      let outs = byRoute.get(route);
      if (!outs) byRoute.set(route, (outs = rs.map(() => next++)));
      rs.forEach((r, i) => walk(r, outs[i]!));
    };
    walk(source.name, 0);
    copies.set(source.name, ends);
  }
  return { forks, copies };
}
