/** Every notifier channel, by the key it has in a notifier's `properties`. */
import type { Channel } from '../channel.js';
import { customWebhook } from './custom-webhook.js';
import { discord } from './discord.js';
import { discordWebhook } from './discord-webhook.js';
import { email } from './email.js';
import { microsoftTeams } from './microsoft-teams.js';
import { opsgenie } from './opsgenie.js';
import { pagerduty } from './pagerduty.js';
import { slack } from './slack.js';
import { webhook } from './webhook.js';

export const CHANNELS: ReadonlyMap<string, Channel<never>> = new Map(
  [email, slack, discord, discordWebhook, microsoftTeams, opsgenie, pagerduty, webhook, customWebhook].map((c) => [
    c.key,
    c as Channel<never>,
  ]),
);
