/**
 * A notifier channel (management.md §2.2): the key it has in a notifier's `properties`, how its settings
 * are read and shown, and how it delivers one alert notification. Each channel is one file in channels/,
 * registered by name in channels/index.ts.
 */
import { STATUS_CODES } from 'node:http';
import type { HttpAnswer } from '../../util/http-post.js';
import { isRetryable, requestedWaitMs } from '../../util/retry.js';

/** One alert event, as every channel renders it (the customWebhook template's variables, §2.4). */
export interface AlertNotification {
  action: 'Open' | 'Closed';
  monitorId: string;
  /** The monitor's name. */
  title: string;
  description: string;
  /** The sentence of a threshold or anomaly alert, or the event's JSON for a match. */
  body: string;
  /** The value that crossed (threshold, anomaly), 0 when a series stopped returning data; null for a match. */
  value: number | null;
  queryStartTime: Date;
  queryEndTime: Date;
  timestamp: Date;
  matchedEvent: Record<string, unknown> | null;
  groupKeys: string[] | null;
  groupValues: unknown[] | null;
  /** Stable for one alert (a monitor and group, or one matched event): PagerDuty's and Opsgenie's dedup key. */
  alertKey: string;
}

/** A delivery that failed; `retry` says whether sending again may work (network, 429, 5xx). */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
  /** Who sends it (set by delivery): a mail held in the outbox goes out only as its notifier says then. */
  notifierId?: string;
  monitorId?: string;
}

/** What channels reach the world through; the service builds it from its config (service.notifiers). */
export interface ChannelContext {
  post(url: URL, body: unknown, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** Sends a mail through service.notifiers.smtp; without one, keeps it in the outbox and rejects saying so. */
  mail(m: MailMessage): Promise<void>;
  /** Base URLs of the hosted services, overridable for air-gapped hosts, proxies and tests. */
  urls: { pagerduty: string; opsgenie: string; opsgenieEu: string; discord: string };
  /** Why a receiver's host (a name or an address) is refused now, if it is (notifiers/address-policy.ts). */
  refusal(host: string): string | undefined;
}

export interface Channel<P = Record<string, unknown>> {
  key: string;
  /**
   * Reads and checks this channel's settings (a FieldError names `field.key`). On update, `previous` holds
   * the stored settings, so secrets that a client sends back empty (as GET showed them) are kept.
   */
  read(value: unknown, field: string, ctx: ChannelContext, previous?: P): P;
  /**
   * The settings as GET shows them: secrets empty, and URLs that are credentials (a Slack webhook) too
   * unless `full` (the caller may change the notifier).
   */
  view(p: P, full: boolean): Record<string, unknown>;
  send(n: AlertNotification, p: P, ctx: ChannelContext): Promise<void>;
}

/**
 * Checks an answer: 2xx is delivered, 408, 429 and 5xx may be retried (util/retry.ts, as for sinks), anything
 * else is refused. What a
 * receiver answers is never kept or shown, only its status: the receiver may be a service the caller could
 * not otherwise read, and the message would carry its body into the run records.
 */
export function expectOk(what: string, a: HttpAnswer): void {
  if (a.status >= 200 && a.status < 300) return;
  throw new DeliveryError(
    `${what} answered ${a.status}${STATUS_CODES[a.status] ? ` (${STATUS_CODES[a.status]})` : ''}`,
    isRetryable(a.status),
    requestedWaitMs(a.headers, Date.now()),
  );
}

/** The one-line summary every chat channel leads with. */
export function headline(n: AlertNotification): string {
  const group =
    n.groupKeys && n.groupValues
      ? ` (${n.groupKeys.map((k, i) => `${k}=${formatValue(n.groupValues![i])}`).join(', ')})`
      : '';
  return `[${n.action === 'Open' ? 'Triggered' : 'Resolved'}] ${n.title}${group}`;
}

function formatValue(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null');
}

/** A plain-text rendering for chat and mail: headline, sentence, window, description. */
export function plainText(n: AlertNotification): string {
  const lines = [headline(n), n.body];
  if (n.description) lines.push(n.description);
  lines.push(`Window: ${n.queryStartTime.toISOString()} to ${n.queryEndTime.toISOString()}`);
  lines.push(`Monitor: ${n.monitorId}`);
  return lines.join('\n');
}
