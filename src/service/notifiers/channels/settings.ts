/** Reading a channel's settings: case-insensitive keys, required strings and URLs named by their field path. */
import { canonicalKeys, FieldError } from '../../bodies/fields.js';
import type { ChannelContext } from '../channel.js';

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

/**
 * An http(s) URL a notifier sends to. One with credentials in it (user:pass@) is refused: they would be
 * shown and logged with the URL. One whose host is an address the service never sends to (link-local,
 * metadata, outside service.notifiers.allow_networks) is refused at once; a name is checked as it is
 * resolved, at each delivery. A URL that is itself a secret (a Slack webhook) comes back empty to who
 * may not see it; an update that sends it empty keeps `keep`, the stored one.
 */
export function httpUrl(
  s: Record<string, unknown>,
  key: string,
  field: string,
  ctx: Pick<ChannelContext, 'refusal'>,
  keep?: string,
): string {
  const v = text(s, key, field, { required: true, keep });
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new FieldError(`${field}.${key}`, `must be an http or https URL, not "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new FieldError(`${field}.${key}`, `must be an http or https URL, not "${v}"`);
  if (u.username || u.password)
    throw new FieldError(
      `${field}.${key}`,
      'must not hold credentials (user:password@): put them in a header (customWebhook secretHeaders)',
    );
  const why = ctx.refusal(u.hostname);
  if (why) throw new FieldError(`${field}.${key}`, `cannot be a receiver: ${why}`);
  return u.toString();
}
