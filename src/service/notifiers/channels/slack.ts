/** Slack: an incoming webhook (slackUrl), posted {text} in Slack's mrkdwn. */
import { type Channel, expectOk, plainText } from '../channel.js';
import { httpUrl, settings } from './settings.js';

interface Slack {
  slackUrl: string;
}

export const slack: Channel<Slack> = {
  key: 'slack',
  read: (v, field, ctx, previous) => ({
    slackUrl: httpUrl(settings(v, field, ['slackUrl']), 'slackUrl', field, ctx, previous?.slackUrl),
  }),
  // The webhook's URL is its credential.
  view: (p, full) => ({ slackUrl: full ? p.slackUrl : '' }),
  async send(n, p, ctx) {
    const [first, ...rest] = plainText(n).split('\n');
    expectOk('Slack', await ctx.post(new URL(p.slackUrl), { text: `*${first}*\n${rest.join('\n')}` }));
  },
};
