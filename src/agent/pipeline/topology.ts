/**
 * The agent's graph, built once from the config's names and `inputs`: sources → transforms → sinks.
 * Building it checks the wiring (unique names, inputs that exist and are not sinks, no cycles, no source
 * nobody reads); the pipeline then reads the flow order and what each source reaches from it. Pure.
 */
import { ComponentError } from '../../config/options.js';

export interface Wired {
  name: string;
  inputs: readonly string[];
}

type Kind = 'sources' | 'transforms' | 'sinks';

export class Topology {
  private constructor(
    /** Transforms in the order of the flow: each after every transform it reads from. */
    readonly transformOrder: readonly string[],
    private readonly readers: ReadonlyMap<string, readonly string[]>,
    private readonly reach: ReadonlyMap<string, readonly string[]>,
    private readonly transformsFed: ReadonlySet<string>,
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
    for (const [kind, list] of [
      ['transforms', transforms],
      ['sinks', sinks],
    ] as const) {
      for (const c of list) {
        c.inputs.forEach((input, i) => {
          const k = kinds.get(input);
          if (k === undefined)
            throw new ComponentError(
              `${kind}.${c.name}.inputs.${i}`,
              `unknown input "${input}" (inputs name sources or transforms)`,
            );
          if (k === 'sinks')
            throw new ComponentError(
              `${kind}.${c.name}.inputs.${i}`,
              `"${input}" is a sink; inputs name sources or transforms`,
            );
          readers.set(input, [...(readers.get(input) ?? []), c.name]);
        });
      }
    }

    // Flow order by depth-first search from each transform to its inputs; a transform met again while
    // its own inputs are being visited closes a cycle.
    const byName = new Map(transforms.map((t) => [t.name, t]));
    const state = new Map<string, 'visiting' | 'done'>();
    const order: string[] = [];
    const visit = (t: Wired, trail: string[]) => {
      if (state.get(t.name) === 'done') return;
      if (state.get(t.name) === 'visiting')
        throw new ComponentError(`transforms.${t.name}.inputs`, `a cycle: ${[...trail, t.name].join(' → ')}`);
      state.set(t.name, 'visiting');
      for (const i of t.inputs) {
        const up = byName.get(i);
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

    // The sinks each source reaches, in the sinks' order: a line is safe once all of them hold it.
    const reach = new Map<string, string[]>();
    for (const sink of sinks) {
      const seen = new Set<string>();
      const walk = (name: string) => {
        if (seen.has(name)) return;
        seen.add(name);
        const t = byName.get(name);
        if (t) t.inputs.forEach(walk);
        else reach.set(name, [...(reach.get(name) ?? []), sink.name]);
      };
      sink.inputs.forEach(walk);
    }
    const transformsFed = new Set(transforms.flatMap((t) => t.inputs));
    return new Topology(order, readers, reach, transformsFed);
  }

  /** The transforms and sinks that read a component's output, in the config's order. */
  readersOf(name: string): readonly string[] {
    return this.readers.get(name) ?? [];
  }

  /** The sinks a source's lines end up in. */
  sinksReachedFrom(source: string): readonly string[] {
    return this.reach.get(source) ?? [];
  }

  /** Whether a transform reads a source's lines (if not, they go to sinks undecoded). */
  isReadByTransform(source: string): boolean {
    return this.transformsFed.has(source);
  }
}
