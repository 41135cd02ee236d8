/**
 * How notifiers reach the world: HTTP POSTs over kept-alive connections and mail through the configured
 * SMTP server (nodemailer: SMTP with STARTTLS, auth and pooling is a solved problem), or into the outbox
 * while none is configured.
 */
import { createTransport } from 'nodemailer';
import type { NotifiersConfig } from '../config.js';
import { isIP } from 'node:net';
import { HttpPoster } from '../../util/http-post.js';
import { AddressRefused, addressPolicy } from './address-policy.js';
import { type ChannelContext, DeliveryError, type MailMessage } from './channel.js';
import { type FlushOutcome, MailOutbox, type Resolve } from './outbox.js';

export interface Outbound extends ChannelContext {
  /** Mail held while no SMTP server is configured. */
  outbox: MailOutbox;
  /** A new SMTP server (on SIGHUP); once there is one, what the outbox holds is sent. */
  setSmtp(smtp: NotifiersConfig['smtp']): Promise<void>;
  /**
   * Sends what the outbox holds, when an SMTP server is configured, in the background of whoever asks;
   * mail the server did not take is tried again a minute later.
   */
  flushOutbox(): Promise<FlushOutcome | undefined>;
  close(): Promise<void>;
}

export interface OutboxOptions {
  /** Where mail waits while no SMTP server is configured (in the data directory). */
  path: string;
  /** What a held mail is when it can go: to its notifier's addresses now, or set aside (and why). */
  resolve: Resolve;
  /** Told what each flush did (the service logs it). */
  onFlushed?: (outcome: FlushOutcome) => void;
}

export function outbound(cfg: NotifiersConfig, o: OutboxOptions): Outbound {
  const outbox = MailOutbox.open(o.path);
  let retry: NodeJS.Timeout | undefined;
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
  type Smtp = NonNullable<NotifiersConfig['smtp']>;
  const transportFor = (smtp: Smtp) =>
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
  let smtp = cfg.smtp;
  let transport = smtp && transportFor(smtp);
  const send = async (m: MailMessage) => {
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
  };
  return {
    urls: {
      pagerduty: cfg.urls.pagerduty,
      opsgenie: cfg.urls.opsgenie,
      opsgenieEu: cfg.urls.opsgenie_eu,
      discord: cfg.urls.discord,
    },
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
      if (transport) return send(m);
      // Kept, not lost: sent once an SMTP server is configured (setSmtp).
      if (!(await outbox.hold(m, new Date().toISOString())))
        throw new DeliveryError(
          'no SMTP server is configured (service.notifiers.smtp), and the outbox is full: not kept',
          false,
        );
      throw new DeliveryError(
        `not sent: no SMTP server is configured (service.notifiers.smtp); kept in the outbox (${outbox.path}), sent once one is`,
        false,
      );
    },
    outbox,
    async setSmtp(next) {
      if (JSON.stringify(next) === JSON.stringify(smtp)) return;
      transport?.close();
      smtp = next;
      transport = next && transportFor(next);
      // In the background: a slow server must not hold up the reload that set it.
      void this.flushOutbox();
    },
    async flushOutbox() {
      clearTimeout(retry);
      if (!transport || outbox.count === 0) return undefined;
      const outcome = await outbox.flush(send, o.resolve).catch(() => undefined);
      if (outcome) o.onFlushed?.(outcome);
      if (outbox.count > 0 && transport) retry = setTimeout(() => void this.flushOutbox(), 60_000).unref();
      return outcome;
    },
    async close() {
      clearTimeout(retry);
      await Promise.all([posters['http:'].close(), posters['https:'].close()]);
      transport?.close();
    },
  };
}
