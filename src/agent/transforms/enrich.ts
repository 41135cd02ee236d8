/** The `enrich` transform: adds the host name, the source file's path and static fields to each event. */
import { hostname } from 'node:os';
import type { Emit, Envelope, Transform } from './transform.js';
import { eventOf } from './transform.js';

export interface EnrichConfig {
  hostField?: string;
  pathField?: string;
  fields: Record<string, string | number | boolean>;
}

export class EnrichTransform implements Transform {
  private readonly host = hostname();
  private readonly fields: [string, unknown][];

  constructor(readonly name: string, private readonly cfg: EnrichConfig, private readonly next: Emit) {
    this.fields = Object.entries(cfg.fields);
  }

  async process(e: Envelope): Promise<void> {
    if (this.cfg.hostField) set(e, this.cfg.hostField, this.host);
    if (this.cfg.pathField && e.stream.path !== undefined) set(e, this.cfg.pathField, e.stream.path);
    for (const [k, v] of this.fields) set(e, k, v);
    await this.next(e);
  }

  async flush(): Promise<void> {}
}

/** Sets a field, noting it for splicing into the event's verbatim text (a field it already has cannot be). */
function set(e: Envelope, key: string, value: unknown): void {
  const event = eventOf(e);
  if (e.verbatim !== undefined) {
    if (Object.hasOwn(event, key)) e.verbatim = undefined;
    else (e.extra ??= []).push([key, value]);
  }
  event[key] = value;
}
