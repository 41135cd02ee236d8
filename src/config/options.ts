/**
 * A config key, declared once: its JSON schema, its documentation, its default (as the README shows it and
 * as the code uses it, from the same literal), how its value is read (units parsed, checks beyond the
 * schema) and its TypeScript type. The schema the document is validated against, the values a component
 * or section is configured with, and the README's key tables all come from these declarations.
 * Generic: it knows no component.
 *
 *   rotate_wait: duration('5s').doc('a rotated file is released after this long without new data')
 *   compression: oneOf(['gzip', 'zstd', 'none'], 'gzip').doc('…')
 *   url: url().required().doc('…')
 */
import { parseBytes, parseDuration } from '../util/units.js';

/** A fragment of JSON schema, as ajv takes it. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** A setting that is wrong, with the key path that names it (`sinks.out.token`). */
export class ComponentError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

interface OptionParts<T> {
  readonly schema: JsonSchema;
  readonly doc: string;
  /** The default as a reader sees it (`` `1s` ``, "detected"); absent when there is none. */
  readonly shown?: string;
  readonly required: boolean;
  /** The value of the key as the schema let it through (undefined when absent), read; errors name `path`. */
  readonly read: (raw: unknown, path: string) => T;
  /** A group's own keys. */
  readonly keys?: OptionSpecs;
}

/** One key's declaration. Immutable: each refinement answers a new one. */
export class Option<T> {
  constructor(private readonly parts: OptionParts<T>) {}

  get schema(): JsonSchema {
    return this.parts.schema;
  }

  get description(): string {
    return this.parts.doc;
  }

  get shownDefault(): string | undefined {
    return this.parts.shown;
  }

  get isRequired(): boolean {
    return this.parts.required;
  }

  /** The keys of a group (`batch`, `query_limits`), for the README's rows. */
  get keys(): OptionSpecs | undefined {
    return this.parts.keys;
  }

  read(raw: unknown, path: string): T {
    return this.parts.read(raw, path);
  }

  /** What the README says the key does. */
  doc(text: string): Option<T> {
    return new Option({ ...this.parts, doc: text });
  }

  /** The default in words, where it is not a literal (`detected`, `<data_dir>/dead-letter/<sink>.ndjson`). */
  shown(text: string): Option<T> {
    return new Option({ ...this.parts, shown: text });
  }

  /** The key must be set. */
  required(): Option<Exclude<T, undefined>> {
    return new Option({ ...this.parts, required: true }) as unknown as Option<Exclude<T, undefined>>;
  }

  /** The same key, not required (a parser's key offered on the parse transform, required by that parser only). */
  optional(): Option<T | undefined> {
    return new Option<T | undefined>({ ...this.parts, required: false });
  }

  /** A check beyond the schema, on a value that is set: a problem named by the key path. */
  check(problem: (v: Exclude<T, undefined>) => string | undefined): Option<T> {
    const read = this.parts.read;
    return new Option({
      ...this.parts,
      read: (raw, path) => {
        const v = read(raw, path);
        if (v !== undefined) {
          const p = problem(v as Exclude<T, undefined>);
          if (p) throw new ComponentError(path, p);
        }
        return v;
      },
    });
  }
}

export type OptionSpecs = Readonly<Record<string, Option<unknown>>>;

/** The values a set of declarations reads to. */
export type Values<S extends OptionSpecs> = { -readonly [K in keyof S]: S[K] extends Option<infer T> ? T : never };

const code = (v: unknown) => `\`${Array.isArray(v) ? JSON.stringify(v) : String(v)}\``;

/**
 * A key whose value is converted (a duration to ms, a size to bytes): the default literal goes through
 * the same conversion at declaration, so what the README shows is what the code uses.
 */
function converted<Raw, T>(schema: JsonSchema, convert: (raw: Raw) => T, def: Raw | undefined): Option<T> {
  const read = (raw: unknown, path: string): T => {
    try {
      return convert(raw as Raw);
    } catch (e) {
      throw new ComponentError(path, (e as Error).message);
    }
  };
  const fallback = def === undefined ? undefined : read(def, '(default)');
  return new Option<T>({
    schema,
    doc: '',
    shown: def === undefined ? undefined : code(def),
    required: false,
    // A default that is an object or a list is copied: no component changes another's.
    read: (raw, path) => (raw === undefined ? (structuredClone(fallback) as T) : read(raw, path)),
  });
}

const asIs = <T>(v: T): T => v;

function msOf(text: string | number): number {
  // YAML reads a bare `0` as a number: the one duration that needs no unit.
  if (typeof text === 'number') {
    if (text === 0) return 0;
    throw new Error(`a duration needs a unit: "${text}s" or "${text}ms"?`);
  }
  const ns = parseDuration(text);
  if (ns < 0n) throw new Error(`negative duration "${text}"`);
  return Number(ns / 1_000_000n);
}

/** A duration (`250ms`, `1h30m`, Go's syntax plus `d` and `w`), read in milliseconds. */
export function duration(): Option<number | undefined>;
export function duration(def: string): Option<number>;
export function duration(def?: string): Option<number | undefined> {
  return converted({ type: ['string', 'integer'] }, msOf, def);
}

/** A size (`1MiB`, `5MB`, a byte count), read in bytes. */
export function bytes(): Option<number | undefined>;
export function bytes(def: string | number): Option<number>;
export function bytes(def?: string | number): Option<number | undefined> {
  return converted({ type: ['string', 'integer'] }, parseBytes, def);
}

/** An integer within bounds. */
export function int(def?: undefined, range?: { min?: number; max?: number }): Option<number | undefined>;
export function int(def: number, range?: { min?: number; max?: number }): Option<number>;
export function int(def?: number, range: { min?: number; max?: number } = {}): Option<number | undefined> {
  return converted(
    {
      type: 'integer',
      ...(range.min === undefined ? {} : { minimum: range.min }),
      ...(range.max === undefined ? {} : { maximum: range.max }),
    },
    asIs<number>,
    def,
  );
}

export function bool(): Option<boolean | undefined>;
export function bool(def: boolean): Option<boolean>;
export function bool(def?: boolean): Option<boolean | undefined> {
  // `${VAR}` fills a value in as text: "true" and "false" from the environment are the booleans.
  return converted({ type: ['boolean', 'string'] }, boolOf, def);
}

function boolOf(v: boolean | string): boolean {
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  throw new Error(`must be true or false, not "${v}"`);
}

/** A non-empty string (or one matching `pattern`). */
export function str(): Option<string | undefined>;
export function str(def: string, o?: { pattern?: string; minLength?: number }): Option<string>;
export function str(def: undefined, o: { pattern?: string; minLength?: number }): Option<string | undefined>;
export function str(def?: string, o: { pattern?: string; minLength?: number } = {}): Option<string | undefined> {
  return converted(
    { type: 'string', minLength: o.minLength ?? 1, ...(o.pattern ? { pattern: o.pattern } : {}) },
    asIs<string>,
    def,
  );
}

/** One of a few words; an error lists them. */
export function oneOf<const V extends string>(values: readonly V[]): Option<V | undefined>;
export function oneOf<const V extends string>(values: readonly V[], def: NoInfer<V>): Option<V>;
export function oneOf<const V extends string>(values: readonly V[], def?: V): Option<V | undefined> {
  return converted({ enum: [...values] }, asIs<V>, def);
}

function stringList(def: string[] | undefined, minItems: number): Option<string[] | undefined> {
  return converted(
    { type: 'array', items: { type: 'string', minLength: 1 }, ...(minItems ? { minItems } : {}) },
    (v: string[]) => [...v],
    def,
  );
}

/** A list of non-empty strings. */
export function strings(): Option<string[] | undefined>;
export function strings(def: string[]): Option<string[]>;
export function strings(def?: string[]): Option<string[] | undefined> {
  return stringList(def, 0);
}

/** Names that must be at least one (`inputs`). */
export function names(): Option<string[] | undefined> {
  return stringList(undefined, 1);
}

/** File globs (`*`, `**`, `{a,b}`): at least one when set. */
export function globs(): Option<string[] | undefined>;
export function globs(def: string[]): Option<string[]>;
export function globs(def?: string[]): Option<string[] | undefined> {
  return stringList(def, def === undefined ? 1 : 0);
}

/** An http:// or https:// URL. */
export function url(): Option<string | undefined>;
export function url(def: string): Option<string>;
export function url(def?: string): Option<string | undefined> {
  return converted(
    { type: 'string', minLength: 1 },
    (v: string) => {
      // `api.axiom.co` or `localhost:8077` (which URL reads as a scheme): the scheme is what is missing.
      if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(v))
        throw new Error(`"${v}" has no scheme: write http://${v} or https://${v}`);
      let u: URL;
      try {
        u = new URL(v);
      } catch {
        throw new Error(`"${v}" is not a valid URL`);
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:')
        throw new Error(`"${v}" must start with http:// or https://`);
      if (!u.hostname) throw new Error(`"${v}" has no host`);
      return v;
    },
    def,
  );
}

/** A regular expression (RE2's `(?P<name>…)` taken as JavaScript's `(?<name>…)`), compiled to check it. */
export function regex(): Option<string | undefined> {
  return converted(
    { type: 'string', minLength: 1 },
    (pattern: string) => {
      try {
        new RegExp(pattern.replace(/\(\?P</g, '(?<'));
      } catch (e) {
        throw new Error(`invalid regular expression: ${(e as Error).message}`);
      }
      return pattern;
    },
    undefined,
  );
}

/** `host:port`, an IPv6 host in brackets. */
export function listen(def: string): Option<{ host: string; port: number }> {
  return converted({ type: 'string', pattern: '^.+:\\d+$' }, parseHostPort, def);
}

export function parseHostPort(text: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(text.trim());
  if (!m) throw new Error(`expected host:port, got "${text}"`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`port ${port} out of range`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/** Fields and their values (`labels`, `fields`): strings, numbers or booleans. */
export function scalarMap(): Option<Record<string, string | number | boolean>> {
  return converted(
    { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
    (v: Record<string, string | number | boolean>) => ({ ...v }),
    {},
  ).shown('none');
}

/** A value of any schema, taken as the schema let it through (a key that is a boolean or a name). */
export function value<T>(schema: JsonSchema): Option<T | undefined> {
  return converted(schema, asIs<T>, undefined);
}

/** Keys under one key (`batch`, `query_limits`): absent, each takes its default. */
export function group<S extends OptionSpecs>(keys: S): Option<Values<S>> {
  return new Option({ ...groupParts(keys), read: (raw, path) => readOptions(keys, raw ?? {}, path) });
}

/** Keys under one key that is absent as a whole unless set (`smtp`: without it, no mail server). */
export function optionalGroup<S extends OptionSpecs>(keys: S): Option<Values<S> | undefined> {
  return new Option({
    ...groupParts(keys),
    read: (raw, path) => (raw === undefined ? undefined : readOptions(keys, raw, path)),
  });
}

function groupParts(keys: OptionSpecs) {
  return { schema: objectSchema(keys), doc: '', required: false, keys };
}

/** The schema of an object holding these keys and no others. */
export function objectSchema(keys: OptionSpecs): JsonSchema {
  const required = Object.entries(keys)
    .filter(([, o]) => o.isRequired)
    .map(([k]) => k);
  return {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(Object.entries(keys).map(([k, o]) => [k, o.schema])),
    ...(required.length ? { required } : {}),
  };
}

/** Reads every declared key of `raw` (which the schema has checked); errors name `path.key`. */
export function readOptions<S extends OptionSpecs>(specs: S, raw: unknown, path: string): Values<S> {
  const obj = (raw ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, o] of Object.entries(specs)) out[k] = o.read(obj[k], path ? `${path}.${k}` : k);
  return out as Values<S>;
}

/** The word of `candidates` closest to `word` (a misspelt key), when one is close enough to be meant. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  // Short words are a letter or two from many others: only a single slip is taken as meant.
  const allowed = word.length <= 4 ? 1 : Math.max(2, Math.floor(word.length / 3));
  return best !== undefined && bestDistance <= allowed ? best : undefined;
}

/** Levenshtein distance with transpositions counted as one edit (`tiemout`). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/** A component's settings as the config file has them, with the key path every error names. */
export class Options {
  constructor(
    readonly raw: Readonly<Record<string, unknown>>,
    readonly path: string,
  ) {}

  /** The key path of one key. */
  at(key: string): string {
    return `${this.path}.${key}`;
  }

  has(key: string): boolean {
    return this.raw[key] !== undefined;
  }

  /** The values of these declared keys. */
  read<S extends OptionSpecs>(specs: S): Values<S> {
    return readOptions(specs, this.raw, this.path);
  }

  /** Stops with an error naming the key (or the component itself). */
  fail(key: string | undefined, message: string): never {
    throw new ComponentError(key === undefined ? this.path : this.at(key), message);
  }
}
