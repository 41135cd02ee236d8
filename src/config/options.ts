/**
 * A component's settings as the config file has them, with the key path every error names, and the
 * conversions every component needs (durations, sizes, patterns). Generic: it knows no component.
 */
import { parseBytes, parseDuration } from '../util/units.js';

/** A fragment of JSON schema, as ajv takes it. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** One key a component takes: its schema, and what the README says of it. */
export interface OptionSpec {
  readonly schema: JsonSchema;
  readonly doc: string;
  /** The default as a reader sees it (`1s`, `gzip`); absent when there is none. */
  readonly default?: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** A setting that is wrong, with the key path that names it (`sinks.out.token`). */
export class ComponentError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

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

  /** A value as the schema checked it (the caller names its type). */
  get<T>(key: string): T | undefined {
    return this.raw[key] as T | undefined;
  }

  or<T>(key: string, fallback: T): T {
    return (this.raw[key] as T | undefined) ?? fallback;
  }

  /** A duration (`250ms`, `1h30m`) in milliseconds. */
  ms(key: string, fallback: number): number {
    const v = this.raw[key];
    if (v === undefined) return fallback;
    try {
      const ns = parseDuration(v as string);
      if (ns < 0n) throw new Error(`negative duration "${v as string}"`);
      return Number(ns / 1_000_000n);
    } catch (e) {
      throw new ComponentError(this.at(key), (e as Error).message);
    }
  }

  /** A size (`1MiB`, `5MB`, a byte count) in bytes. */
  bytes(key: string, fallback: number): number {
    const v = this.raw[key];
    if (v === undefined) return fallback;
    try {
      return parseBytes(v as string | number);
    } catch (e) {
      throw new ComponentError(this.at(key), (e as Error).message);
    }
  }

  /** A regular expression (RE2's `(?P<name>…)` taken as JavaScript's `(?<name>…)`), checked now. */
  regex(key: string): string | undefined {
    const pattern = this.raw[key] as string | undefined;
    if (pattern === undefined) return undefined;
    try {
      new RegExp(pattern.replace(/\(\?P</g, '(?<'));
    } catch (e) {
      throw new ComponentError(this.at(key), `invalid regular expression: ${(e as Error).message}`);
    }
    return pattern;
  }

  /** The settings under one key (`batch`, `retry`), empty when absent. */
  nested(key: string): Options {
    return new Options((this.raw[key] as Record<string, unknown> | undefined) ?? {}, this.at(key));
  }

  /** Stops with an error naming the key (or the component itself). */
  fail(key: string | undefined, message: string): never {
    throw new ComponentError(key === undefined ? this.path : this.at(key), message);
  }
}
