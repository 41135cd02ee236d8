/** Reading a channel's settings: case-insensitive keys, required strings and URLs named by their field path. */
import { canonicalKeys, FieldError } from '../../http/body-fields.js';

export function settings(value: unknown, field: string, keys: readonly string[]): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new FieldError(field, 'must be an object');
  return canonicalKeys(value, keys, {}, 'channel');
}

export function text(
  s: Record<string, unknown>,
  key: string,
  field: string,
  o: { required?: boolean; keep?: string } = {},
): string {
  const v = s[key];
  if (v !== undefined && v !== null && typeof v !== 'string')
    throw new FieldError(`${field}.${key}`, 'must be a string');
  const got = (v as string | undefined) ?? '';
  // A secret comes back empty from GET; an update that sends it so keeps the stored one.
  if (!got && o.keep) return o.keep;
  if (!got && o.required) throw new FieldError(`${field}.${key}`, 'is required');
  return got;
}

export function httpUrl(s: Record<string, unknown>, key: string, field: string): string {
  const v = text(s, key, field, { required: true });
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new FieldError(`${field}.${key}`, `must be an http or https URL, not "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new FieldError(`${field}.${key}`, `must be an http or https URL, not "${v}"`);
  return u.toString();
}
