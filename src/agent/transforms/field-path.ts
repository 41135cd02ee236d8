/**
 * A field named in a transform's config (`key: trace_id`, `fields: [message, host.name]`): the event's
 * field of that exact name, else, for a dotted name, the path through nested objects (`host.name` reads
 * both `{"host.name": …}`, as the enrich transform writes it, and `{"host": {"name": …}}`). Undefined where
 * the event has neither.
 */
import { createHash } from 'node:crypto';

export type FieldReader = (data: Readonly<Record<string, unknown>>) => unknown;

export function fieldReader(name: string): FieldReader {
  const parts = name.split('.');
  if (parts.length === 1) return (data) => own(data, name);
  return (data) => {
    const flat = own(data, name);
    if (flat !== undefined) return flat;
    let v: unknown = data;
    for (const p of parts) {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
      v = own(v as Record<string, unknown>, p);
    }
    return v;
  };
}

function own(o: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

/** A field's value as a key to group events by: a string as it is, anything else as its JSON. */
export function keyText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Keys longer than this are remembered by their SHA-256: what a transform keeps per key stays small. */
const LONGEST_KEPT_KEY = 128;

/** A key as a transform remembers it: as it is when short, its digest otherwise. */
export function keptKey(key: string): string {
  return key.length > LONGEST_KEPT_KEY ? createHash('sha256').update(key).digest('base64') : key;
}
