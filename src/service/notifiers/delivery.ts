/**
 * Delivering one notification through one notifier: retried with the sinks' policy (util/retry.ts:
 * exponential backoff with full jitter, or the receiver's Retry-After) while the failure may pass, given
 * up at once when it will not.
 */
import { type AlertNotification, type ChannelContext, DeliveryError } from './channel.js';
import { CHANNELS } from './channels/index.js';
import { backoffMs } from '../../util/retry.js';
import { channelOf, type Notifier } from './notifier.js';

export interface DeliveryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  /** The wait before the second try; each later wait doubles. */
  firstDelayMs: number;
  /** The longest wait between tries, Retry-After included. */
  maxDelayMs: number;
  sleep?: (ms: number) => Promise<void>;
  /** Aborted when the service stops: no further tries. */
  signal?: AbortSignal;
}

export interface DeliveryOutcome {
  notifierId: string;
  channel: string;
  delivered: boolean;
  attempts: number;
  error?: string;
}

export async function deliver(
  notifier: Notifier,
  n: AlertNotification,
  ctx: ChannelContext,
  policy: DeliveryPolicy,
): Promise<DeliveryOutcome> {
  const { key, settings } = channelOf(notifier);
  const channel = CHANNELS.get(key)!;
  const sleep = policy.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  // A mail says who sends it, so one held in the outbox is checked against the notifier when it goes out.
  const withOrigin: ChannelContext = {
    ...ctx,
    mail: (m) => ctx.mail({ ...m, notifierId: notifier.id, monitorId: n.monitorId }),
  };
  let error = '';
  for (let attempt = 1; attempt <= policy.attempts; attempt++) {
    try {
      await channel.send(n, settings as never, withOrigin);
      return { notifierId: notifier.id, channel: key, delivered: true, attempts: attempt };
    } catch (e) {
      const retry = e instanceof DeliveryError ? e.retry : true; // network errors may pass
      error = (e as Error).message;
      if (!retry || attempt === policy.attempts || policy.signal?.aborted)
        return { notifierId: notifier.id, channel: key, delivered: false, attempts: attempt, error };
      const hinted = e instanceof DeliveryError ? e.retryAfterMs : undefined;
      await Promise.race([
        sleep(
          Math.min(
            policy.maxDelayMs,
            hinted ?? backoffMs(attempt, { initialMs: policy.firstDelayMs, maxMs: policy.maxDelayMs }),
          ),
        ),
        new Promise<void>((r) => policy.signal?.addEventListener('abort', () => r(), { once: true })),
      ]);
      if (policy.signal?.aborted)
        return {
          notifierId: notifier.id,
          channel: key,
          delivered: false,
          attempts: attempt,
          error: `${error} (not tried again: the service stopped)`,
        };
    }
  }
  return { notifierId: notifier.id, channel: key, delivered: false, attempts: policy.attempts, error };
}
