/**
 * The notifier object (management.md §2): a name, exactly one channel in `properties`, and an optional
 * snooze (disabledUntil). Pure; channels read and show their own settings.
 */
import { randomBytes } from 'node:crypto';
import { canonicalKeys, FieldError, optionalTime } from '../bodies/fields.js';
import type { ChannelContext } from './channel.js';
import { CHANNELS } from './channels/index.js';

export interface Notifier {
  id: string;
  name: string;
  /** One member: the channel's key → its settings (secrets included; views hide them). */
  properties: Record<string, Record<string, unknown>>;
  disabledUntil: string | null;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
}

export function newNotifierId(): string {
  return `notify_${randomBytes(12).toString('base64url').replace(/[-_]/g, '').slice(0, 14).padEnd(14, '0')}`;
}

export function channelOf(n: Pick<Notifier, 'properties'>): { key: string; settings: Record<string, unknown> } {
  const [key, settings] = Object.entries(n.properties)[0]!;
  return { key, settings };
}

/** Reads a create or update body; on update, `previous` lets a channel keep secrets sent back empty. */
export function readNotifierBody(
  body: unknown,
  ctx: ChannelContext,
  previous?: Notifier,
): Pick<Notifier, 'name' | 'properties' | 'disabledUntil'> {
  const b = canonicalKeys(body, ['name', 'properties', 'disabledUntil'], {}, 'notifier');
  if (typeof b.name !== 'string' || !b.name.trim()) throw new FieldError('name', 'is required');
  const props = b.properties;
  if (!props || typeof props !== 'object' || Array.isArray(props))
    throw new FieldError('properties', `is required: an object with one channel (${[...CHANNELS.keys()].join(', ')})`);
  const set = Object.entries(props).filter(([, v]) => v !== null && v !== undefined);
  const known = (k: string) => [...CHANNELS.keys()].find((c) => c.toLowerCase() === k.toLowerCase());
  for (const [k] of set)
    if (!known(k))
      throw new FieldError(`properties.${k}`, `is not a channel (one of ${[...CHANNELS.keys()].join(', ')})`);
  if (set.length !== 1)
    throw new FieldError(
      'properties',
      `must hold exactly one channel, not ${set.length} (${set.map(([k]) => k).join(', ') || 'none'})`,
    );
  const [rawKey, value] = set[0]!;
  const key = known(rawKey)!;
  const channel = CHANNELS.get(key)!;
  const before = previous && channelOf(previous).key === key ? channelOf(previous).settings : undefined;
  const settings = channel.read(value, `properties.${key}`, ctx, before as never) as Record<string, unknown>;
  return {
    name: b.name.trim(),
    properties: { [key]: settings },
    disabledUntil: optionalTime(b.disabledUntil, 'disabledUntil'),
  };
}

/**
 * What a client sees: secrets empty, and URLs that are credentials too unless `full` (it may change the
 * notifier); disabledUntil null once the snooze is over (the spec: null when enabled).
 */
export function notifierView(n: Notifier, full: boolean, nowMs: number): Record<string, unknown> {
  const { key, settings } = channelOf(n);
  return {
    ...n,
    disabledUntil: isSnoozed(n, nowMs) ? n.disabledUntil : null,
    properties: { [key]: CHANNELS.get(key)!.view(settings as never, full) },
  };
}

/** A snoozed notifier sends nothing until disabledUntil; its monitors go on running. */
export function isSnoozed(n: Pick<Notifier, 'disabledUntil'>, nowMs: number): boolean {
  return n.disabledUntil !== null && Date.parse(n.disabledUntil) > nowMs;
}
