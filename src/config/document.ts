/**
 * The config file as a document: YAML, `${VAR}` substitution, validation against a JSON schema, and errors
 * that name the key path. Generic: the sections (agent, service) bring their schemas and readers.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { errnoWords } from '../util/errno-words.js';
import type { ErrorObject, Options as AjvOptions, ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { closest, ComponentError, parseHostPort, type JsonSchema } from './options.js';
import { KEYS_BY_TYPE } from './registry.js';

export class ConfigError extends Error {
  constructor(
    message: string,
    readonly path: string = '',
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** "/service/listen" → "service.listen"; array indices stay numeric ("sources.0.path"). */
function keyPath(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra) parts.push(extra);
  return parts.join('.') || '(root)';
}

/** The keys an object may have: of its type, for a component whose schema names each type's keys. */
function knownKeys(err: ErrorObject): string[] {
  const byType = err.parentSchema?.[KEYS_BY_TYPE] as
    { discriminator: string; keys: Record<string, string[]> } | undefined;
  const type = (err.data as Record<string, unknown> | undefined)?.[byType?.discriminator ?? ''];
  if (byType && typeof type === 'string' && byType.keys[type]) return [byType.discriminator, ...byType.keys[type]];
  return Object.keys((err.parentSchema?.properties as Record<string, unknown> | undefined) ?? {});
}

/** One schema error in words; an unknown key names the closest known one, a wrong word lists the allowed ones. */
function describe(err: ErrorObject): string {
  if (err.keyword === 'additionalProperties') {
    const key = (err.params as { additionalProperty: string }).additionalProperty;
    const meant = closest(key, knownKeys(err));
    return `${keyPath(err.instancePath, key)}: unknown key${meant ? `; did you mean ${meant}?` : ''}`;
  }
  if (err.keyword === 'enum') {
    const allowed = (err.params as { allowedValues: unknown[] }).allowedValues.map((v) => String(v));
    const meant = typeof err.data === 'string' ? closest(err.data, allowed) : undefined;
    // YAML reads `rfc: 3164` as a number: the word is right, it wants quotes.
    const quote =
      typeof err.data === 'number' && allowed.includes(String(err.data)) ? ` (quote it: '${err.data}')` : '';
    return `${keyPath(err.instancePath)}: must be one of ${allowed.join(', ')}${meant ? ` (did you mean ${meant}?)` : quote}`;
  }
  return `${keyPath(err.instancePath)}: ${err.message ?? 'invalid'}`;
}

/**
 * Replaces ${VAR} and ${VAR:-default} in every string value (not in keys, and after YAML parsing,
 * so a variable's content can never change the document's structure).
 */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, path = ''): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, def?: string) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (def !== undefined) return def;
      throw new ConfigError(`${path || '(root)'}: environment variable ${name} is not set and has no default`, path);
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, path ? `${path}.${i}` : String(i)));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, env, path ? `${path}.${k}` : k);
    return out;
  }
  return value;
}

/** How schemas are compiled, here and ahead of time (a validator's errors depend on them). */
export const AJV_OPTIONS: AjvOptions = { allErrors: true, strict: false, verbose: true };

/** A validator compiled ahead of time by `npm run build` (cli/build-config-validator.ts), for one schema. */
export interface PrecompiledValidator {
  (doc: unknown): boolean;
  errors?: ErrorObject[] | null;
  /** schemaHash() of the schema it was compiled from. */
  schemaHash: string;
}

/** What a precompiled validator is checked against: the schema it was made from, exactly. */
export function schemaHash(schema: JsonSchema): string {
  return createHash('sha256').update(JSON.stringify(schema)).digest('hex');
}

function compile(schema: JsonSchema): ValidateFunction {
  // ajv is loaded only where no validator was compiled ahead of time (run from the sources, as the tests are).
  const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
  return new Ajv(AJV_OPTIONS).compile(schema);
}

/**
 * A validator for documents of one schema: answers the document, or throws naming every bad key.
 *
 * `ahead` (loaded at first use) is used when it was compiled from this very schema (a build's own): compiling the whole config's
 * schema at every start of a command takes longer than the rest of reading the config (docs/benchmarks.md).
 * Otherwise the schema is compiled when first used and let go a second after the last use: ajv's generated
 * code for the whole config holds megabytes of a daemon's heap that it needs only at start and on SIGHUP.
 */
export function documentValidator(
  schema: JsonSchema,
  ahead?: () => PrecompiledValidator | undefined,
): (doc: unknown) => Record<string, unknown> {
  let compiled: ValidateFunction | undefined;
  let release: NodeJS.Timeout | undefined;
  let made: PrecompiledValidator | null | undefined;
  return (doc) => {
    if (made === undefined) {
      const found = ahead?.();
      made = found?.schemaHash === schemaHash(schema) ? found : null;
    }
    let validate: PrecompiledValidator | ValidateFunction;
    if (made) {
      validate = made;
    } else {
      validate = compiled ??= compile(schema);
      clearTimeout(release);
      release = setTimeout(() => (compiled = undefined), 1000);
      release.unref();
    }
    if (validate(doc)) return doc as Record<string, unknown>;
    // An if/then failure is also reported by the keyword that failed inside `then`: say that one only.
    const msgs = [...new Set((validate.errors ?? []).filter((e) => e.keyword !== 'if').map(describe))];
    throw new ConfigError(`invalid config:\n  ${msgs.join('\n  ')}`, keyPath(validate.errors?.[0]?.instancePath ?? ''));
  };
}

/** Runs a section's reader, turning a setting it refuses into a ConfigError naming the key. */
export function readSection<T>(read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof ComponentError) throw new ConfigError(`invalid config:\n  ${e.message}`, e.path);
    throw e;
  }
}

/** `host:port`, an IPv6 host in brackets. */
export function parseListen(text: string, path: string): { host: string; port: number } {
  try {
    return parseHostPort(text);
  } catch (e) {
    throw new ConfigError(`${path}: ${(e as Error).message}`, path);
  }
}

/** The YAML document of a config file; errors name the file. */
export function readConfigDocument(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new ConfigError(`cannot read config ${file}: ${errnoWords(err.code) ?? err.message}`);
  }
  try {
    return parseYaml(text);
  } catch (e) {
    throw new ConfigError(`${file}: YAML syntax error: ${(e as Error).message}`);
  }
}
