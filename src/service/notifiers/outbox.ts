/**
 * Mail held while no SMTP server is configured: e-mail notifiers are accepted without one (the spec lists
 * e-mail among the channels), and what they would send waits in a file in the data directory, one JSON
 * line per mail, until a server is configured (at start, or on SIGHUP). Nothing is dropped quietly: the
 * mails held are counted in /health and /metrics, each delivery that was held says so in the run, and a
 * mail set aside when it is finally sent (its notifier or monitor deleted, or too old) is logged.
 *
 * The outbox is bounded in mails and in bytes, and each mail's text in bytes: whoever can make events
 * match a monitor must not be able to fill the disk, or a file too large to read at the next start.
 */
import { appendFile, rename, rm, writeFile } from 'node:fs/promises';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { MailMessage } from './channel.js';

/** Mails held at most: past it a delivery fails as any other would, rather than the file growing forever. */
export const MAX_HELD_MAILS = 10_000;
/** Bytes the outbox file may hold. */
export const MAX_OUTBOX_BYTES = 64 * 1024 * 1024;
/** A held mail's text is cut past this many bytes (a matched event can be large), saying so. */
export const MAX_HELD_TEXT_BYTES = 256 * 1024;
/** A mail held longer than this is set aside when a server comes: an alert of last month is noise. */
export const MAX_HELD_AGE_MS = 7 * 86_400_000;

export interface HeldMail extends MailMessage {
  /** When it was held (RFC 3339). */
  at: string;
}

/** What becomes of a held mail when it can be sent: the mail to send now, or why it is set aside. */
export type Resolve = (m: HeldMail) => MailMessage | { setAside: string };

export interface FlushOutcome {
  sent: number;
  kept: number;
  setAside: { mail: HeldMail; why: string }[];
}

export class MailOutbox {
  private held: number;
  private bytes: number;
  private oldest: string | undefined;
  /** Appends and the hand-over of the file to a flush, one after another. */
  private chain: Promise<unknown> = Promise.resolve();
  private flushing: Promise<FlushOutcome> | undefined;
  /** A file found too large to read at start, moved aside (its path), if any. */
  readonly movedAside: string | undefined;

  private constructor(
    readonly path: string,
    mails: HeldMail[],
    movedAside: string | undefined,
  ) {
    this.held = mails.length;
    this.bytes = mails.reduce((n, m) => n + lineOf(m).length, 0);
    this.oldest = mails[0]?.at;
    this.movedAside = movedAside;
  }

  /**
   * Opens the outbox at `path`, taking back what a flush cut short (by a crash) had not sent. A file larger
   * than the outbox ever writes (made by hand) is not read: it is moved aside, and /health says where.
   */
  static open(path: string): MailOutbox {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    let movedAside: string | undefined;
    for (const file of [path, `${path}.sending`]) {
      if (existsSync(file) && statSync(file).size > 2 * MAX_OUTBOX_BYTES) {
        movedAside = `${file}.too-large-${Date.now()}`;
        renameSync(file, movedAside);
      }
    }
    const mails = [...readMails(`${path}.sending`), ...readMails(path)];
    return new MailOutbox(path, mails, movedAside);
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
      const line = lineOf({ ...m, text: cut(m.text), at });
      if (this.held >= MAX_HELD_MAILS || this.bytes + line.length > MAX_OUTBOX_BYTES) return false;
      await appendFile(this.path, line, { mode: 0o600 });
      if (this.held === 0) this.oldest = at;
      this.held++;
      this.bytes += line.length;
      return true;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  /**
   * Sends what is held, oldest first, as `resolve` says it is to be sent now; a mail that fails stays held
   * (in order, before those held meanwhile). One flush at a time: a second call gets the first one's result.
   */
  flush(send: (m: MailMessage) => Promise<void>, resolve: Resolve): Promise<FlushOutcome> {
    this.flushing ??= this.flushOnce(send, resolve).finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushOnce(send: (m: MailMessage) => Promise<void>, resolve: Resolve): Promise<FlushOutcome> {
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
    const setAside: FlushOutcome['setAside'] = [];
    let sent = 0;
    for (const m of mails) {
      const now = resolve(m);
      if ('setAside' in now) {
        setAside.push({ mail: m, why: now.setAside });
        continue;
      }
      try {
        await send(now);
        sent++;
      } catch {
        kept.push(m);
      }
    }
    const done = this.chain.then(async () => {
      const all = [...kept, ...readMails(this.path)];
      await writeLines(this.path, all);
      await rm(sending, { force: true });
      this.held = all.length;
      this.bytes = all.reduce((n, x) => n + lineOf(x).length, 0);
      this.oldest = all[0]?.at;
    });
    this.chain = done.catch(() => undefined);
    await done;
    return { sent, kept: kept.length, setAside };
  }
}

function lineOf(m: HeldMail): string {
  return `${JSON.stringify(m)}\n`;
}

function cut(text: string): string {
  if (Buffer.byteLength(text) <= MAX_HELD_TEXT_BYTES) return text;
  return `${Buffer.from(text).subarray(0, MAX_HELD_TEXT_BYTES).toString('utf8')}\n[… cut: the mail was longer than ${MAX_HELD_TEXT_BYTES} bytes while it waited for an SMTP server]\n`;
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
  await writeFile(tmp, mails.map(lineOf).join(''), { mode: 0o600 });
  await rename(tmp, path);
}
