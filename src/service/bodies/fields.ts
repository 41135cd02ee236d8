/**
 * Reading management bodies as Axiom's Go server does: keys match case-insensitively (axiom-go sends
 * `notifierIDs` and untagged `URL`), read-only and unknown keys are ignored, and Go's zero time means unset.
 * A bad field is a FieldError, answered 400 with the field's name first.
 */

export class FieldError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

/**
 * The body's members under their canonical names. `aliases` maps further lower-cased spellings to a
 * canonical key. A body that is not a JSON object is refused, naming `what`.
 */
export function canonicalKeys(
  body: unknown,
  keys: readonly string[],
  aliases: Record<string, string>,
  what: string,
): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new FieldError('body', `must be a JSON object (a ${what})`);
  const byLower = new Map<string, string>(keys.map((k) => [k.toLowerCase(), k]));
  for (const [alias, key] of Object.entries(aliases)) byLower.set(alias, key);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    const canonical = byLower.get(k.toLowerCase());
    // The exact spelling wins over a case variant sent alongside it.
    if (canonical && (out[canonical] === undefined || k === canonical)) out[canonical] = v;
  }
  return out;
}

/** An optional RFC 3339 time: absent, null, "" and Go's zero time are unset (null). */
export function optionalTime(v: unknown, field: string): string | null {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v !== 'string') throw new FieldError(field, 'must be an RFC 3339 date-time or null');
  if (v.startsWith('0001-01-01')) return null;
  const ms = Date.parse(v);
  if (Number.isNaN(ms) || !/^\d{4}-\d{2}-\d{2}T/.test(v))
    throw new FieldError(field, `must be an RFC 3339 date-time, not "${v}"`);
  return new Date(ms).toISOString();
}
