/**
 * How notifiers reach the world: HTTP POSTs over kept-alive connections and mail through the configured
 * SMTP server (nodemailer: SMTP with STARTTLS, auth and pooling is a solved problem).
 */
import { createTransport } from 'nodemailer';
import type { NotifiersConfig } from '../config.js';
import { isIP } from 'node:net';
import { HttpPoster } from '../../util/http-post.js';
import { AddressRefused, addressPolicy } from './address-policy.js';
import { type ChannelContext, DeliveryError, type MailMessage } from './channel.js';

export interface Outbound extends ChannelContext {
  close(): Promise<void>;
}

export function outbound(cfg: NotifiersConfig): Outbound {
  const policy = addressPolicy(cfg.allowNetworks, cfg.denyNetworks);
  const posters = {
    'http:': new HttpPoster(new URL('http://localhost/'), { connections: 8, idleMs: 30_000, lookup: policy.lookup }),
    'https:': new HttpPoster(new URL('https://localhost/'), { connections: 8, idleMs: 30_000, lookup: policy.lookup }),
  };
  /** An address written in a URL is not resolved, so it is checked here; a name, as it is resolved. */
  const refusal = (host: string) => {
    const bare = host.replace(/^\[|\]$/g, '');
    return isIP(bare) ? policy.refusal(bare) : undefined;
  };
  const smtp = cfg.smtp;
  const transport =
    smtp &&
    createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      requireTLS: smtp.starttls === 'required',
      ignoreTLS: smtp.starttls === 'off',
      auth: smtp.user ? { user: smtp.user, pass: smtp.password ?? '' } : undefined,
      connectionTimeout: cfg.timeoutMs,
      greetingTimeout: cfg.timeoutMs,
      socketTimeout: cfg.timeoutMs,
    });
  return {
    urls: {
      pagerduty: cfg.urls.pagerduty,
      opsgenie: cfg.urls.opsgenie,
      opsgenieEu: cfg.urls.opsgenie_eu,
      discord: cfg.urls.discord,
    },
    smtpConfigured: !!transport,
    refusal,
    async post(url, body, headers = {}) {
      const poster = posters[url.protocol as 'http:' | 'https:'];
      if (!poster) throw new DeliveryError(`cannot post to ${url.protocol} URLs`, false);
      const why = refusal(url.hostname);
      if (why) throw new DeliveryError(`refused to send to ${url.host}: ${why}`, false);
      const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
      try {
        return await poster.post(
          bytes,
          { 'content-type': 'application/json', 'user-agent': 'ferry-notifier', ...headers },
          cfg.timeoutMs,
          url,
        );
      } catch (e) {
        if (e instanceof AddressRefused) throw new DeliveryError(`refused to send to ${e.message}`, false);
        throw e;
      }
    },
    async mail(m: MailMessage) {
      if (!transport || !smtp) throw new DeliveryError('no SMTP server is configured (service.notifiers.smtp)', false);
      try {
        await transport.sendMail({ from: smtp.from, to: m.to, subject: m.subject, text: m.text });
      } catch (e) {
        const code = (e as { responseCode?: number }).responseCode;
        // 5xx replies are permanent (a refused recipient, failed auth); the rest may pass.
        throw new DeliveryError(
          `SMTP ${smtp.host}:${smtp.port}: ${(e as Error).message}`,
          !(code !== undefined && code >= 500),
        );
      }
    },
    async close() {
      await Promise.all([posters['http:'].close(), posters['https:'].close()]);
      transport?.close();
    },
  };
}
