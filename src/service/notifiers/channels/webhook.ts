/** A plain webhook (url): the documented default payload, as JSON. */
import { type Channel, expectOk } from '../channel.js';
import { httpUrl, settings } from './settings.js';
import { defaultPayload } from './webhook-payload.js';

interface Webhook {
  url: string;
}

export const webhook: Channel<Webhook> = {
  key: 'webhook',
  read: (v, field, ctx, previous) => ({ url: httpUrl(settings(v, field, ['url']), 'url', field, ctx, previous?.url) }),
  // A webhook's URL often carries its token (a path or a query string).
  view: (p, full) => ({ url: full ? p.url : '' }),
  async send(n, p, ctx) {
    expectOk('the webhook', await ctx.post(new URL(p.url), defaultPayload(n)));
  },
};
