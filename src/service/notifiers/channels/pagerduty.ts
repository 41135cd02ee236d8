/**
 * PagerDuty Events API v2: Open triggers and Closed resolves one incident, keyed by the alert's dedup key,
 * so an alert opens and closes a single incident. `token` is the deprecated v1 field, kept but unused.
 */
import { type Channel, expectOk, headline } from '../channel.js';
import { settings, text } from './settings.js';

interface PagerDuty {
  routingKey: string;
  token: string;
}

export const pagerduty: Channel<PagerDuty> = {
  key: 'pagerduty',
  read(v, field, _ctx, previous) {
    const s = settings(v, field, ['routingKey', 'token']);
    return {
      routingKey: text(s, 'routingKey', field, { required: true, keep: previous?.routingKey }),
      token: text(s, 'token', field, { keep: previous?.token }),
    };
  },
  // Secrets are not shown (the API redacts them too; management.md §2.2).
  view: () => ({ routingKey: '', token: '' }),
  async send(n, p, ctx) {
    const event =
      n.action === 'Open'
        ? {
            routing_key: p.routingKey,
            event_action: 'trigger',
            dedup_key: n.alertKey,
            payload: {
              summary: `${headline(n)}: ${n.body}`.slice(0, 1024),
              source: 'ferry',
              severity: 'critical',
              timestamp: n.timestamp.toISOString(),
              component: n.monitorId,
              custom_details: {
                description: n.description,
                value: n.value,
                queryStartTime: n.queryStartTime.toISOString(),
                queryEndTime: n.queryEndTime.toISOString(),
                matchedEvent: n.matchedEvent,
                groupKeys: n.groupKeys,
                groupValues: n.groupValues,
              },
            },
          }
        : { routing_key: p.routingKey, event_action: 'resolve', dedup_key: n.alertKey };
    expectOk('PagerDuty', await ctx.post(new URL('v2/enqueue', withSlash(ctx.urls.pagerduty)), event));
  },
};

export function withSlash(u: string): string {
  return u.endsWith('/') ? u : `${u}/`;
}
