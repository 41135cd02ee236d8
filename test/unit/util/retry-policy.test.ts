/**
 * One retry policy for the agent's sinks and the service's notifiers (src/util/retry.ts): the same
 * statuses are tried again, Retry-After is read in seconds or as an HTTP date, and waits have full jitter.
 */
import { describe, expect, it } from 'vitest';
import {
  type AlertNotification,
  type ChannelContext,
  DeliveryError,
  expectOk,
} from '../../../src/service/notifiers/channel.js';
import { deliver } from '../../../src/service/notifiers/delivery.js';
import type { Notifier } from '../../../src/service/notifiers/notifier.js';
import { backoffMs, isRetryable, requestedWaitMs } from '../../../src/util/retry.js';

const answer = (status: number, headers: Record<string, string> = {}) => ({
  status,
  headers,
  text: '',
  body: Buffer.alloc(0),
});

describe('one retry policy', () => {
  it('a notifier retries what a sink retries, 408 included, and reads Retry-After as seconds or a date', () => {
    for (const status of [400, 401, 404, 408, 413, 429, 500, 503]) {
      let retry: boolean | undefined;
      try {
        expectOk('the webhook', answer(status));
      } catch (e) {
        retry = (e as DeliveryError).retry;
      }
      expect(retry, String(status)).toBe(isRetryable(status));
    }
    const inSeconds = (() => {
      try {
        expectOk('x', answer(429, { 'retry-after': '7' }));
      } catch (e) {
        return (e as DeliveryError).retryAfterMs;
      }
    })();
    expect(inSeconds).toBe(7000);
    const at = new Date(Date.now() + 60_000).toUTCString();
    const asDate = (() => {
      try {
        expectOk('x', answer(503, { 'retry-after': at }));
      } catch (e) {
        return (e as DeliveryError).retryAfterMs;
      }
    })();
    // The same reading as a sink's, give or take the milliseconds between the two clocks read.
    const sinkReads = requestedWaitMs({ 'retry-after': at }, Date.now()) ?? -1;
    expect(Math.abs(asDate! - sinkReads)).toBeLessThanOrEqual(50);
    expect(asDate).toBeGreaterThan(55_000);
  });

  it('a notifier waits with full jitter between tries, as sinks do', async () => {
    const waits: number[] = [];
    let calls = 0;
    const ctx = {
      post: async () => answer(++calls < 6 ? 503 : 200),
      mail: async () => undefined,
      urls: { pagerduty: '', opsgenie: '', opsgenieEu: '', discord: '' },
      refusal: () => undefined,
    } as unknown as ChannelContext;
    const notifier: Notifier = {
      id: 'notify_x',
      name: 'x',
      properties: { webhook: { url: 'https://hooks.example.com/x' } },
      disabledUntil: null,
      createdAt: '',
      createdBy: '',
      updatedAt: '',
    };
    const n = {
      action: 'Open',
      monitorId: 'mon_x',
      title: 't',
      description: '',
      body: 'b',
      value: 1,
      queryStartTime: new Date(),
      queryEndTime: new Date(),
      timestamp: new Date(),
      matchedEvent: null,
      groupKeys: null,
      groupValues: null,
      alertKey: 'k',
    } as AlertNotification;
    const out = await deliver(notifier, n, ctx, {
      attempts: 6,
      firstDelayMs: 1000,
      maxDelayMs: 60_000,
      sleep: async (ms) => void waits.push(ms),
    });
    expect(out).toMatchObject({ delivered: true, attempts: 6 });
    expect(waits).toHaveLength(5);
    // Each wait lies within its exponential bound; with full jitter they are not the bounds themselves.
    waits.forEach((w, i) => expect(w).toBeLessThanOrEqual(1000 * 2 ** i));
    expect(waits.some((w, i) => w !== 1000 * 2 ** i)).toBe(true);
    expect(backoffMs(3, { initialMs: 1000, maxMs: 60_000 }, () => 0.5)).toBe(2000);
  });
});
