/**
 * Opsgenie Alert API: Open creates an alert whose alias is the alert's dedup key, Closed closes it by
 * alias. `isEU` sends to the EU host.
 */
import { type Channel, expectOk, headline } from '../channel.js';
import { FieldError } from '../../bodies/fields.js';
import { withSlash } from './pagerduty.js';
import { settings, text } from './settings.js';

interface Opsgenie {
  apiKey: string;
  isEU: boolean;
}

export const opsgenie: Channel<Opsgenie> = {
  key: 'opsgenie',
  read(v, field, _ctx, previous) {
    const s = settings(v, field, ['apiKey', 'isEU']);
    if (s.isEU !== undefined && s.isEU !== null && typeof s.isEU !== 'boolean')
      throw new FieldError(`${field}.isEU`, 'must be true or false');
    return { apiKey: text(s, 'apiKey', field, { required: true, keep: previous?.apiKey }), isEU: s.isEU === true };
  },
  view: (p) => ({ apiKey: '', isEU: p.isEU }),
  async send(n, p, ctx) {
    const base = withSlash(p.isEU ? ctx.urls.opsgenieEu : ctx.urls.opsgenie);
    const auth = { authorization: `GenieKey ${p.apiKey}` };
    // Opsgenie's alias and message limits: 512 and 130 characters.
    const alias = n.alertKey.slice(0, 512);
    if (n.action === 'Open') {
      const body = {
        message: headline(n).slice(0, 130),
        alias,
        description: `${n.body}\n${n.description}`.trim().slice(0, 15000),
        source: 'ferry',
        entity: n.monitorId,
        priority: 'P3',
        details: Object.fromEntries(
          Object.entries({
            value: n.value,
            queryStartTime: n.queryStartTime.toISOString(),
            queryEndTime: n.queryEndTime.toISOString(),
            group: n.groupValues ? JSON.stringify(n.groupValues) : undefined,
          })
            .filter(([, v]) => v !== undefined && v !== null)
            .map(([k, v]) => [k, String(v)]),
        ),
      };
      expectOk('Opsgenie', await ctx.post(new URL('v2/alerts', base), body, auth));
    } else {
      const url = new URL(`v2/alerts/${encodeURIComponent(alias)}/close?identifierType=alias`, base);
      expectOk('Opsgenie', await ctx.post(url, { source: 'ferry', note: n.body }, auth));
    }
  },
};
