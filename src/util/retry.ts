/**
 * When to try a failed delivery again, for the agent's sinks and the service's notifiers alike:
 * exponential backoff with full jitter (a random wait up to the exponential bound, so that many senders do
 * not retry in step), capped, and overridden by the receiver's own Retry-After (seconds or an HTTP date) or
 * rate-limit reset; network errors, 408, 429 and 5xx are tried again. Pure functions.
 */

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

/** Unless configured: a first retry soon, and never more than half a minute between tries. */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 250, maxMs: 30_000 };

/** The wait before attempt `attempt` (1 = the first retry). */
export function backoffMs(attempt: number, o: BackoffOptions, random: () => number = Math.random): number {
  const bound = Math.min(o.maxMs, o.initialMs * 2 ** Math.min(attempt - 1, 30));
  return Math.floor(random() * bound);
}

/**
 * The wait the receiver asks for, in ms, or undefined: `Retry-After` (seconds or an HTTP date), else
 * `X-RateLimit-Reset` (epoch seconds, as Axiom sends it).
 */
export function requestedWaitMs(
  headers: Record<string, string | string[] | undefined>,
  nowMs: number,
): number | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const ra = first(headers['retry-after']);
  if (ra !== undefined && ra.trim() !== '') {
    if (/^\d+(\.\d+)?$/.test(ra.trim())) return Math.round(Number(ra) * 1000);
    const at = Date.parse(ra);
    if (!Number.isNaN(at)) return Math.max(0, at - nowMs);
  }
  const reset = first(headers['x-ratelimit-reset']);
  if (reset !== undefined && /^\d+$/.test(reset.trim())) return Math.max(0, Number(reset) * 1000 - nowMs);
  return undefined;
}

/** 401 and 403 (the token), 404 (the dataset): refusals an operator fixes in the config. */
export function isConfigRefusal(status: number): boolean {
  return status === 401 || status === 403 || status === 404;
}

/** Network errors, 408, 429 and 5xx are worth trying again; other answers are final. */
export function isRetryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
