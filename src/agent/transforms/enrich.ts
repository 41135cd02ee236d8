/** The `enrich` transform: adds the host name, the source file's path and static fields to each event. */
import { hostname } from 'node:os';
import { addedField, eventOf, type AddedField, type Emit, type Envelope, type Transform } from './transform.js';

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

  constructor(readonly name: string, private readonly cfg: EnrichConfig, private readonly next: Emit) {
    this.host = cfg.hostField ? addedField(cfg.hostField, hostname()) : undefined;
    this.fields = Object.entries(cfg.fields).map(([k, v]) => addedField(k, v));
  }

  async process(e: Envelope): Promise<void> {
    if (this.host) set(e, this.host);
    if (this.cfg.pathField && e.stream.path !== undefined) set(e, this.pathField(e.stream.path, this.cfg.pathField));
    for (const f of this.fields) set(e, f);
    await this.next(e);
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

/** Sets a field, noting it for splicing into the event's verbatim text (a field it already has cannot be). */
function set(e: Envelope, f: AddedField): void {
  const event = eventOf(e);
  if (e.verbatim !== undefined) {
    if (Object.hasOwn(event, f.key)) e.verbatim = undefined;
    else (e.extra ??= []).push(f);
  }
  event[f.key] = f.value;
}
