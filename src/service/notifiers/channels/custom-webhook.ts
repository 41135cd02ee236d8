/**
 * A custom webhook: `body` is a Go text/template over the notification's variables (with jsonObject and
 * jsonArray), posted as application/json with `headers` and `secretHeaders`. Secret header values are never
 * shown; an update that sends one empty keeps the stored value.
 */
import { FieldError } from '../../bodies/fields.js';
import { type AlertNotification, type Channel, DeliveryError, expectOk } from '../channel.js';
import { parseTemplate, renderTemplate, type Template, TemplateError } from '../go-template.js';
import { httpUrl, settings, text } from './settings.js';
import { templateData } from './webhook-payload.js';

interface CustomWebhook {
  url: string;
  body: string;
  headers: Record<string, string>;
  secretHeaders: Record<string, string>;
}

const toJson = (v: unknown) => (v === null || v === undefined ? 'null' : JSON.stringify(v));
const FUNCS = { jsonObject: toJson, jsonArray: toJson };

const SAMPLE: AlertNotification = {
  action: 'Open',
  monitorId: 'mon_sample',
  title: 'Sample monitor',
  description: '',
  body: 'Current value of 1 is above the threshold value of 0',
  value: 1,
  queryStartTime: new Date(0),
  queryEndTime: new Date(60_000),
  timestamp: new Date(60_000),
  matchedEvent: { message: 'sample' },
  groupKeys: ['key'],
  groupValues: ['value'],
  alertKey: 'mon_sample',
};

const parsed = new Map<string, Template>();
function compiled(body: string): Template {
  let t = parsed.get(body);
  if (!t) {
    t = parseTemplate(body);
    if (parsed.size > 1000) parsed.clear();
    parsed.set(body, t);
  }
  return t;
}

function headerMap(v: unknown, field: string, previous?: Record<string, string>): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v))
    throw new FieldError(field, 'must be an object of header names to values');
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) throw new FieldError(field, `has "${k}", which is not a header name`);
    if (typeof val !== 'string' || /[\r\n\0]/.test(val))
      throw new FieldError(`${field}.${k}`, 'must be a string without line breaks');
    const kept =
      previous && val === ''
        ? Object.entries(previous).find(([pk]) => pk.toLowerCase() === k.toLowerCase())?.[1]
        : undefined;
    out[k] = kept ?? val;
  }
  return out;
}

export const customWebhook: Channel<CustomWebhook> = {
  key: 'customWebhook',
  read(v, field, ctx, previous) {
    const s = settings(v, field, ['url', 'body', 'headers', 'secretHeaders']);
    const body = text(s, 'body', field, { required: true });
    try {
      renderTemplate(compiled(body), templateData(SAMPLE), FUNCS);
    } catch (e) {
      if (e instanceof TemplateError)
        throw new FieldError(`${field}.body`, `is not a template this service can render: ${e.message}`);
      throw e;
    }
    const url = httpUrl(s, 'url', field, ctx, previous?.url);
    // A stored secret goes only where it went: a new URL takes its secrets sent again.
    const keep = previous && previous.url === url ? previous.secretHeaders : undefined;
    const secretHeaders = headerMap(s.secretHeaders, `${field}.secretHeaders`, keep);
    for (const [k, val] of Object.entries(secretHeaders))
      if (val === '' && previous && !keep)
        throw new FieldError(
          `${field}.secretHeaders.${k}`,
          'is empty, and the url changed: a stored secret is not sent to a new URL; send its value again',
        );
    return { url, body, headers: headerMap(s.headers, `${field}.headers`), secretHeaders };
  },
  view: (p, full) => ({
    url: full ? p.url : '',
    body: p.body,
    headers: p.headers,
    secretHeaders: Object.fromEntries(Object.keys(p.secretHeaders).map((k) => [k, ''])),
  }),
  async send(n, p, ctx) {
    let rendered: string;
    try {
      rendered = renderTemplate(compiled(p.body), templateData(n), FUNCS);
    } catch (e) {
      throw new DeliveryError(`the body template failed: ${(e as Error).message}`, false);
    }
    expectOk(
      'the custom webhook',
      await ctx.post(new URL(p.url), Buffer.from(rendered), { ...p.headers, ...p.secretHeaders }),
    );
  },
};
