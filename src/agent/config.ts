/**
 * The agent's part of the config: named sources, transforms and sinks wired by `inputs`. Each component's
 * keys, defaults and checks come from its spec in the registries; the wiring is checked by building the
 * topology once. Pure: no I/O. Every error names the key path.
 */
import {
  bool,
  ComponentError,
  duration,
  group,
  listen,
  names,
  objectSchema,
  Options,
  str,
  type JsonSchema,
  type OptionSpecs,
} from '../config/options.js';
import { configureComponent, type ComponentSpec, type Registry } from '../config/registry.js';
import { configureSink, SINK_OPTIONS, type SinkSettings } from './delivery/settings.js';
import { outputName, Topology } from './pipeline/topology.js';
import { sinks as sinkRegistry } from './sinks/index.js';
import type { SinkSpec } from './sinks/sink.js';
import { sources as sourceRegistry } from './sources/index.js';
import type { SourceSpec } from './sources/source.js';
import { transforms as transformRegistry } from './transforms/index.js';
import type { TransformSpec } from './transforms/transform.js';

/** A configured component: its spec, and its settings as the spec read them. */
interface Configured<Spec> {
  name: string;
  type: string;
  spec: Spec;
  settings: unknown;
}

export type SourceConfig = Configured<SourceSpec>;

export interface TransformConfig extends Configured<TransformSpec> {
  inputs: string[];
  /** Its named outputs (a route's), read as `<name>.<output>`. */
  outputs?: string[];
}

export interface SinkConfig extends Configured<SinkSpec>, SinkSettings {
  inputs: string[];
}

export interface AgentConfig {
  dataDir: string;
  api: { enabled: boolean; listen: { host: string; port: number } };
  shutdownTimeoutMs: number;
  sources: SourceConfig[];
  transforms: TransformConfig[];
  sinks: SinkConfig[];
  topology: Topology;
}

type Raw = Record<string, unknown>;

/** Names of sources, transforms and sinks: they become metric labels and file names. */
const COMPONENT_NAME = '^[A-Za-z0-9_][A-Za-z0-9_.-]*$';

const TRANSFORM_OPTIONS = {
  inputs: names().required().doc('the sources or transforms it reads from'),
} satisfies OptionSpecs;

/** The `agent:` section. */
export const AGENT_OPTIONS = {
  data_dir: str('./data/agent').doc(
    'queues (`queues/<sink>`), checkpoints (`checkpoints/<source>.json`), dead-letter files (`dead-letter/<sink>.ndjson`)',
  ),
  api: group({
    enabled: bool(true).doc("the agent's HTTP API: `GET /metrics`, `GET /health`, `GET /components`, `GET /tap`"),
    listen: listen('127.0.0.1:8078').doc("where the agent's HTTP API listens (`host:port`)"),
  }),
  shutdown_timeout: duration('10s').doc(
    'how long SIGTERM waits for queues to be delivered; the process ends by then whatever is still running (`serve` too)',
  ),
} satisfies OptionSpecs;

/** The component sections: the registry of each, and the keys every component of it takes. */
export const COMPONENT_SECTIONS = [
  {
    key: 'sources',
    registry: sourceRegistry as Registry<ComponentSpec>,
    common: {} as OptionSpecs,
  },
  {
    key: 'transforms',
    registry: transformRegistry as Registry<ComponentSpec>,
    common: TRANSFORM_OPTIONS as OptionSpecs,
  },
  {
    key: 'sinks',
    registry: sinkRegistry as Registry<ComponentSpec>,
    common: SINK_OPTIONS as OptionSpecs,
  },
] as const;

/** The schema of the agent's sections, assembled from the registries. */
export const agentSchema: Readonly<Record<string, JsonSchema>> = {
  agent: objectSchema(AGENT_OPTIONS),
  ...Object.fromEntries(
    COMPONENT_SECTIONS.map((s) => [
      s.key,
      {
        type: 'object',
        propertyNames: { pattern: COMPONENT_NAME },
        additionalProperties: s.registry.schema('type', s.common),
      },
    ]),
  ),
};

function entries(doc: Raw, key: string): [string, Options][] {
  return Object.entries((doc[key] as Record<string, Raw> | undefined) ?? {}).map(([name, raw]) => [
    name,
    new Options(raw, `${key}.${name}`),
  ]);
}

/** The agent section and the topology, from the validated document. */
export function buildAgentConfig(doc: Raw, serviceEnabled: boolean): AgentConfig {
  const a = new Options((doc.agent as Raw | undefined) ?? {}, 'agent').read(AGENT_OPTIONS);
  const sources = entries(doc, 'sources').map(([name, o]): SourceConfig => {
    const type = o.raw.type as string;
    sourceRegistry.checkKeys(o, type, ['type']);
    const spec = sourceRegistry.get(type);
    return { name, type, spec, settings: configureComponent(spec, o) };
  });
  const transforms = entries(doc, 'transforms').map(([name, o]): TransformConfig => {
    const type = o.raw.type as string;
    transformRegistry.checkKeys(o, type, ['type', ...Object.keys(TRANSFORM_OPTIONS)]);
    const spec = transformRegistry.get(type);
    const { inputs } = o.read(TRANSFORM_OPTIONS);
    const settings = configureComponent(spec, o);
    return { name, type, inputs, spec, settings, outputs: spec.outputs?.(settings) };
  });
  const sinks = entries(doc, 'sinks').map(([name, o]): SinkConfig => {
    const type = o.raw.type as string;
    sinkRegistry.checkKeys(o, type, ['type', ...Object.keys(SINK_OPTIONS)]);
    const spec = sinkRegistry.get(type);
    if (spec.needsService && !serviceEnabled)
      o.fail('type', `a ${type} sink writes into the embedded service: it needs service.enabled: true`);
    return {
      name,
      type,
      spec,
      settings: configureComponent(spec, o),
      ...configureSink(o, spec.datasetOptional ? name : undefined),
    };
  });
  for (const spec of sourceRegistry.specs) {
    if (spec.single && sources.filter((s) => s.spec === spec).length > 1)
      throw new ComponentError('sources', `at most one ${spec.type} source`);
  }
  for (const source of sources) {
    const metrics = source.spec.metricsDataset?.(source.settings);
    const sink = sinks.find((k) => k.dataset === metrics);
    if (sink)
      throw new ComponentError(
        `sources.${source.name}.dataset`,
        `"${metrics}" is sink ${sink.name}'s own dataset, which holds events: give the metrics a dataset of their own`,
      );
  }
  const topology = Topology.of(sources, transforms, sinks);
  refuseJoiningAfterRoute(transforms);
  return {
    dataDir: a.data_dir,
    api: a.api,
    shutdownTimeoutMs: a.shutdown_timeout,
    sources,
    transforms,
    sinks,
    topology,
  };
}

/**
 * A transform that joins the lines of a stream may not read what a route sends on: the route may send the
 * pieces of one event (a stack trace's lines, a container line's parts) down different paths, where none
 * is whole and a piece held back holds its file's checkpoint.
 */
function refuseJoiningAfterRoute(transforms: TransformConfig[]): void {
  const byName = new Map(transforms.map((t) => [t.name, t]));
  const outputs = new Set(transforms.flatMap((t) => (t.outputs ?? []).map((o) => outputName(t.name, o))));
  // A route's output, or a transform reading one (the topology has refused cycles already).
  const afterRoute = new Map<string, boolean>();
  const routed = (name: string): boolean => {
    let r = afterRoute.get(name);
    if (r === undefined) {
      r = outputs.has(name) || (byName.get(name)?.inputs.some(routed) ?? false);
      afterRoute.set(name, r);
    }
    return r;
  };
  for (const t of transforms)
    if (t.spec.joinsLines?.(t.settings) && t.inputs.some(routed))
      throw new ComponentError(
        `transforms.${t.name}.inputs`,
        `a ${t.type} transform joins lines of a stream, and reads what a route sends on, which may split one event's lines across its outputs: put it before the route`,
      );
}
