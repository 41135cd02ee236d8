/** E-mail (emails) through the SMTP server of service.notifiers.smtp (held in the outbox while none is set). */
import { FieldError } from '../../bodies/fields.js';
import { type Channel, headline, plainText } from '../channel.js';
import { settings } from './settings.js';

interface Email {
  emails: string[];
}

// The address shape, not a full RFC 5322 check: the SMTP server has the last word.
const ADDRESS = /^[^\s@<>(),;:"]+@[^\s@<>(),;:"]+$/;

export const email: Channel<Email> = {
  key: 'email',
  read(v, field) {
    const s = settings(v, field, ['emails']);
    const emails = s.emails;
    if (!Array.isArray(emails) || emails.length === 0)
      throw new FieldError(`${field}.emails`, 'must be a non-empty array of addresses');
    for (const e of emails)
      if (typeof e !== 'string' || !ADDRESS.test(e))
        throw new FieldError(`${field}.emails`, `has "${String(e)}", which is not an e-mail address`);
    return { emails: [...new Set(emails as string[])] };
  },
  view: (p) => ({ emails: [...p.emails] }),
  async send(n, p, ctx) {
    await ctx.mail({
      to: p.emails,
      subject: headline(n),
      text: `${plainText(n)}${n.matchedEvent ? `\n\nEvent:\n${JSON.stringify(n.matchedEvent, null, 2)}` : ''}\n`,
    });
  },
};
