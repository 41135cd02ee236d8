/** The `enrich` transform: adds the host name, the source file's path and static fields to each event. */
import { scalarMap, value, type OptionSpecs } from '../../config/options.js';
import { hostname } from 'node:os';
import { addedField, type AddedField } from '../event.js';
import {
  eventOf,
  newTransformCounters,
  type Emit,
  type Envelope,
  type Transform,
  type TransformCounters,
  type TransformSpec,
} from './transform.js';

export interface EnrichConfig {
  hostField?: string;
  pathField?: string;
  fields: Record<string, string | number | boolean>;
}

export class EnrichTransform implements Transform {
  private readonly host: AddedField | undefined;
  private readonly fields: AddedField[];
  /** The path field of each file, made once per file. */
  private readonly paths = new Map<string, AddedField>();

  constructor(
    readonly name: string,
    private readonly cfg: EnrichConfig,
    private readonly next: Emit,
    readonly counters: TransformCounters = newTransformCounters(),
  ) {
    this.host = cfg.hostField ? addedField(cfg.hostField, hostname()) : undefined;
    this.fields = Object.entries(cfg.fields).map(([k, v]) => addedField(k, v));
  }

  process(e: Envelope): Promise<void> | undefined {
    if (e.dropped) return this.next(e);
    this.counters.eventsIn++;
    this.counters.eventsOut++;
    const event = eventOf(e);
    if (this.host) event.add(this.host);
    if (this.cfg.pathField && e.stream.path !== undefined) event.add(this.pathField(e.stream.path, this.cfg.pathField));
    for (const f of this.fields) event.add(f);
    return this.next(e);
  }

  private pathField(path: string, key: string): AddedField {
    let f = this.paths.get(path);
    if (!f) {
      // Files come and go (rotation): the cache is dropped rather than grown without bound.
      if (this.paths.size >= 1024) this.paths.clear();
      this.paths.set(path, (f = addedField(key, path)));
    }
    return f;
  }

  async flush(): Promise<void> {}
}

/** `true` names the field as OpenTelemetry does; a string names it. */
function fieldName(v: unknown, otel: string): string | undefined {
  return v === true ? otel : typeof v === 'string' && v ? v : undefined;
}

const ENRICH_OPTIONS = {
  host: value<boolean | string>({ type: ['boolean', 'string'] })
    .doc('the host name: `true` → field `host.name`, or a field name')
    .shown('off'),
  source_path: value<boolean | string>({ type: ['boolean', 'string'] })
    .doc("the file's path: `true` → `log.file.path`, or a field name")
    .shown('off'),
  fields: scalarMap().doc('static fields'),
} satisfies OptionSpecs;

export const enrichTransform: TransformSpec<EnrichConfig, typeof ENRICH_OPTIONS> = {
  type: 'enrich',
  summary: "adds the host name, the file's path and static fields to each event",
  options: ENRICH_OPTIONS,
  configure: (v) => ({
    // OpenTelemetry's names: plain `host` would overwrite a field many logs have (the HTTP Host).
    hostField: fieldName(v.host, 'host.name'),
    pathField: fieldName(v.source_path, 'log.file.path'),
    fields: v.fields,
  }),
  create: (s, ctx) => new EnrichTransform(ctx.name, s, ctx.next, ctx.counters(newTransformCounters)),
};
