/** Discord through a channel webhook (discordWebhookUrl), posted {content}. */
import { type Channel, expectOk, plainText } from '../channel.js';
import { httpUrl, settings } from './settings.js';

interface DiscordWebhook {
  discordWebhookUrl: string;
}

/** Discord refuses content over 2,000 characters. */
export const DISCORD_MAX_CONTENT = 2000;

export const discordWebhook: Channel<DiscordWebhook> = {
  key: 'discordWebhook',
  read: (v, field, ctx, previous) => ({
    discordWebhookUrl: httpUrl(
      settings(v, field, ['discordWebhookUrl']),
      'discordWebhookUrl',
      field,
      ctx,
      previous?.discordWebhookUrl,
    ),
  }),
  // The webhook's URL is its credential.
  view: (p, full) => ({ discordWebhookUrl: full ? p.discordWebhookUrl : '' }),
  async send(n, p, ctx) {
    expectOk(
      'Discord',
      await ctx.post(new URL(p.discordWebhookUrl), { content: plainText(n).slice(0, DISCORD_MAX_CONTENT) }),
    );
  },
};
