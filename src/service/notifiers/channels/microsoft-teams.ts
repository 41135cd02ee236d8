/**
 * Microsoft Teams through an incoming webhook (microsoftTeamsUrl): a message with one Adaptive Card, the
 * format both Workflows webhooks and the older connectors take.
 */
import { type Channel, expectOk, headline } from '../channel.js';
import { httpUrl, settings } from './settings.js';

interface Teams {
  microsoftTeamsUrl: string;
}

export const microsoftTeams: Channel<Teams> = {
  key: 'microsoftTeams',
  read: (v, field, ctx, previous) => ({
    microsoftTeamsUrl: httpUrl(
      settings(v, field, ['microsoftTeamsUrl']),
      'microsoftTeamsUrl',
      field,
      ctx,
      previous?.microsoftTeamsUrl,
    ),
  }),
  // The webhook's URL is its credential.
  view: (p, full) => ({ microsoftTeamsUrl: full ? p.microsoftTeamsUrl : '' }),
  async send(n, p, ctx) {
    const facts = [
      { title: 'Monitor', value: n.monitorId },
      { title: 'Window', value: `${n.queryStartTime.toISOString()} to ${n.queryEndTime.toISOString()}` },
      ...(n.value !== null ? [{ title: 'Value', value: String(n.value) }] : []),
    ];
    const card = {
      $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
      type: 'AdaptiveCard',
      version: '1.4',
      body: [
        { type: 'TextBlock', text: headline(n), weight: 'Bolder', size: 'Medium', wrap: true },
        { type: 'TextBlock', text: n.body, wrap: true },
        ...(n.description ? [{ type: 'TextBlock', text: n.description, wrap: true, isSubtle: true }] : []),
        { type: 'FactSet', facts },
      ],
    };
    const message = {
      type: 'message',
      attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }],
    };
    expectOk('Microsoft Teams', await ctx.post(new URL(p.microsoftTeamsUrl), message));
  },
};
