/** A plain webhook (url): the documented default payload, as JSON. */
import { type Channel, expectOk } from '../channel.js';
import { httpUrl, settings } from './settings.js';
import { defaultPayload } from './webhook-payload.js';

interface Webhook {
  url: string;
}

export const webhook: Channel<Webhook> = {
  key: 'webhook',
  read: (v, field) => ({ url: httpUrl(settings(v, field, ['url']), 'url', field) }),
  view: (p) => ({ ...p }),
  async send(n, p, ctx) {
    expectOk('the webhook', await ctx.post(new URL(p.url), defaultPayload(n)));
  },
};
