/** Discord through a bot (discordToken) posting to a channel (discordChannel) with the REST API. */
import { type Channel, expectOk, plainText } from '../channel.js';
import { DISCORD_MAX_CONTENT } from './discord-webhook.js';
import { settings, text } from './settings.js';
import { FieldError } from '../../bodies/fields.js';

interface Discord {
  discordChannel: string;
  discordToken: string;
}

export const discord: Channel<Discord> = {
  key: 'discord',
  read(v, field, _ctx, previous) {
    const s = settings(v, field, ['discordChannel', 'discordToken']);
    const channel = text(s, 'discordChannel', field, { required: true });
    if (!/^\d{1,25}$/.test(channel))
      throw new FieldError(`${field}.discordChannel`, `must be a Discord channel id (digits), not "${channel}"`);
    return {
      discordChannel: channel,
      discordToken: text(s, 'discordToken', field, { required: true, keep: previous?.discordToken }),
    };
  },
  view: (p) => ({ discordChannel: p.discordChannel, discordToken: '' }),
  async send(n, p, ctx) {
    const url = new URL(
      `api/v10/channels/${p.discordChannel}/messages`,
      ctx.urls.discord.endsWith('/') ? ctx.urls.discord : `${ctx.urls.discord}/`,
    );
    expectOk(
      'Discord',
      await ctx.post(
        url,
        { content: plainText(n).slice(0, DISCORD_MAX_CONTENT) },
        { authorization: `Bot ${p.discordToken}` },
      ),
    );
  },
};
