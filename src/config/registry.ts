/**
 * Components of one kind (sources, parsers, transforms, sinks) by their type name, as the config names
 * them. Each component's file exports one spec: its type, the keys it takes (schema and documentation),
 * how its settings are read (defaults, units, checks beyond the schema) and how it is built. The config's
 * schema, its key checks, the pipeline and the README's tables all read from here, so adding a component
 * is one file and its registration.
 */
import { closest, Options, type JsonSchema, type OptionSpecs, type Values } from './options.js';

export interface ComponentSpec<Settings = unknown, Keys extends OptionSpecs = OptionSpecs> {
  readonly type: string;
  /** What it does, in a line: the README's tables and the CLI's help. */
  readonly summary: string;
  /** The keys this type takes beyond those every component of its kind takes, each declared once. */
  readonly options: Keys;
  /**
   * The settings from the keys' values (defaults applied, units parsed), with the checks that span keys;
   * errors name the key path through `o`.
   */
  configure(values: Values<Keys>, o: Options): Settings;
}

/** The annotation on a registry's schema naming the keys of each type (config/document.ts reads it). */
export const KEYS_BY_TYPE = 'x-keys-by-type';

/** The keys of a declaration set that must be set. */
export function requiredKeys(options: OptionSpecs): string[] {
  return Object.entries(options)
    .filter(([, o]) => o.isRequired)
    .map(([k]) => k);
}

/** A component's settings: its keys read, then its own configure. */
export function configureComponent<Settings>(spec: ComponentSpec<Settings>, o: Options): Settings {
  return spec.configure(o.read(spec.options), o);
}

export class Registry<Spec extends ComponentSpec> {
  private readonly byType = new Map<string, Spec>();

  /** @param kind the config section's singular (`source`), for messages */
  constructor(
    readonly kind: string,
    specs: readonly Spec[],
  ) {
    for (const s of specs) {
      if (this.byType.has(s.type)) throw new Error(`two ${kind}s named ${s.type}`);
      this.byType.set(s.type, s);
    }
  }

  get types(): string[] {
    return [...this.byType.keys()];
  }

  get specs(): Spec[] {
    return [...this.byType.values()];
  }

  /** The spec of a type the schema has already checked. */
  get(type: string): Spec {
    const s = this.byType.get(type);
    if (!s) throw new Error(`no ${this.kind} of type ${type}`);
    return s;
  }

  /**
   * Every key any type takes (the schema allows their union, typed by the first type that declares a
   * key); `discriminator` picks the type, and each type's required keys apply when it is picked.
   */
  schema(discriminator: string, common: OptionSpecs): JsonSchema {
    const properties: Record<string, JsonSchema> = { [discriminator]: { enum: this.types } };
    for (const [k, o] of Object.entries(common)) properties[k] = o.schema;
    // A key that types read differently (`fields`: enrich's map, dedupe's list) is checked per type.
    const shapes = new Map<string, Set<string>>();
    for (const s of this.specs)
      for (const [k, o] of Object.entries(s.options)) {
        if (k in common) continue;
        const seen = shapes.get(k) ?? new Set<string>();
        shapes.set(k, seen.add(JSON.stringify(o.schema)));
      }
    const perType = new Set([...shapes].filter(([, v]) => v.size > 1).map(([k]) => k));
    for (const s of this.specs)
      for (const [k, o] of Object.entries(s.options)) properties[k] ??= perType.has(k) ? {} : o.schema;
    const rules = this.specs
      .map((s) => {
        const own = Object.entries(s.options).filter(([k]) => perType.has(k));
        const then: JsonSchema = {
          ...(requiredKeys(s.options).length ? { required: requiredKeys(s.options) } : {}),
          ...(own.length ? { properties: Object.fromEntries(own.map(([k, o]) => [k, o.schema])) } : {}),
        };
        return { if: { properties: { [discriminator]: { const: s.type } }, required: [discriminator] }, then };
      })
      .filter((r) => Object.keys(r.then).length > 0);
    return {
      type: 'object',
      additionalProperties: false,
      // Not a validation keyword: what each type takes, for the closest key to an unknown one.
      [KEYS_BY_TYPE]: {
        discriminator,
        keys: Object.fromEntries(this.specs.map((s) => [s.type, [...Object.keys(common), ...Object.keys(s.options)]])),
      },
      required: [discriminator, ...requiredKeys(common)],
      properties,
      ...(rules.length ? { allOf: rules } : {}),
    };
  }

  /** Refuses a key that belongs to other types only, saying which take it. */
  checkKeys(o: Options, type: string, common: Iterable<string>): void {
    const allowed = new Set([...common, ...Object.keys(this.get(type).options)]);
    for (const k of Object.keys(o.raw)) {
      if (allowed.has(k)) continue;
      const owners = this.specs.filter((s) => k in s.options).map((s) => s.type);
      const meant = closest(k, allowed);
      o.fail(
        k,
        `not a key of a ${type} ${this.kind}${owners.length ? ` (only of ${owners.join(', ')})` : ''}${meant ? `; did you mean ${meant}?` : ''}`,
      );
    }
  }
}
