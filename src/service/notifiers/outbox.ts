/**
 * Mail held while no SMTP server is configured: e-mail notifiers are accepted without one (the spec lists
 * e-mail among the channels), and what they would send waits in a file in the data directory, one JSON
 * line per mail, until a server is configured (at start, or on SIGHUP). Nothing is dropped quietly: the
 * mails held are counted in /health and /metrics, and each delivery that was held says so in the history.
 */
import { appendFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { MailMessage } from './channel.js';

/** Mails held at most: past it a delivery fails as any other would, rather than the file growing forever. */
export const MAX_HELD_MAILS = 10_000;

interface HeldMail extends MailMessage {
  /** When it was held (RFC 3339). */
  at: string;
}

export class MailOutbox {
  private held: number;
  private oldest: string | undefined;
  /** Appends and the hand-over of the file to a flush, one after another. */
  private chain: Promise<unknown> = Promise.resolve();
  private flushing: Promise<{ sent: number; kept: number }> | undefined;

  private constructor(
    readonly path: string,
    mails: HeldMail[],
  ) {
    this.held = mails.length;
    this.oldest = mails[0]?.at;
  }

  /** Opens the outbox at `path`, taking back what a flush cut short (by a crash) had not sent. */
  static open(path: string): MailOutbox {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const sending = `${path}.sending`;
    const mails = [...readMails(sending), ...readMails(path)];
    return new MailOutbox(path, mails);
  }

  get count(): number {
    return this.held;
  }

  /** When the oldest mail held was held, if any is. */
  get since(): string | undefined {
    return this.held > 0 ? this.oldest : undefined;
  }

  /** Keeps a mail; false when the outbox is full (then the delivery fails and says so). */
  hold(m: MailMessage, at: string): Promise<boolean> {
    const next = this.chain.then(async () => {
      if (this.held >= MAX_HELD_MAILS) return false;
      await appendFile(this.path, `${JSON.stringify({ at, to: m.to, subject: m.subject, text: m.text })}\n`, {
        mode: 0o600,
      });
      if (this.held === 0) this.oldest = at;
      this.held++;
      return true;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  /**
   * Sends what is held, oldest first; a mail that fails stays held (in order, before those held meanwhile).
   * One flush at a time: a second call while one runs gets the first one's result.
   */
  flush(send: (m: MailMessage) => Promise<void>): Promise<{ sent: number; kept: number }> {
    this.flushing ??= this.flushOnce(send).finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushOnce(send: (m: MailMessage) => Promise<void>): Promise<{ sent: number; kept: number }> {
    const sending = `${this.path}.sending`;
    // The file is handed over whole; mails held from now on start a new one.
    const taken = this.chain.then(async () => {
      const mails = [...readMails(sending), ...readMails(this.path)];
      // All of them go to `sending` before the outbox file goes: a crash between leaves a mail in both
      // (sent twice), never in neither.
      await writeLines(sending, mails);
      await rm(this.path, { force: true });
      return mails;
    });
    this.chain = taken.catch(() => undefined);
    const mails = await taken;
    const kept: HeldMail[] = [];
    let sent = 0;
    for (const m of mails) {
      try {
        await send(m);
        sent++;
      } catch {
        kept.push(m);
      }
    }
    const done = this.chain.then(async () => {
      const later = readMails(this.path);
      const all = [...kept, ...later];
      await writeLines(this.path, all);
      await rm(sending, { force: true });
      this.held = all.length;
      this.oldest = all[0]?.at;
    });
    this.chain = done.catch(() => undefined);
    await done;
    return { sent, kept: kept.length };
  }
}

function readMails(path: string): HeldMail[] {
  if (!existsSync(path)) return [];
  const out: HeldMail[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      const m = JSON.parse(line) as HeldMail;
      if (Array.isArray(m.to) && typeof m.subject === 'string' && typeof m.text === 'string') out.push(m);
    } catch {
      // A line cut by a crash mid-append: the rest of the file is still read.
    }
  }
  return out;
}

async function writeLines(path: string, mails: HeldMail[]): Promise<void> {
  if (mails.length === 0) {
    await rm(path, { force: true });
    return;
  }
  const tmp = `${path}.tmp`;
  await writeFile(tmp, mails.map((m) => `${JSON.stringify(m)}\n`).join(''), { mode: 0o600 });
  await rename(tmp, path);
}
