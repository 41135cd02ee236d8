/**
 * The `journald` source: the systemd journal, read through `journalctl --output=json --follow`, from the
 * cursor after the last entry known to be durable downstream.
 *
 * journalctl rather than the journal files read directly: the file format (hash tables, entry arrays,
 * xz/lz4/zstd compressed fields, files rotated and vacuumed under the reader) is systemd's to keep, and
 * journalctl reads every version of it, applies the unit, identifier, priority and field matches itself,
 * and follows new entries. What it costs is in docs/benchmarks.md.
 *
 * Each entry becomes one event with the journal's field names; `__CURSOR` and `__REALTIME_TIMESTAMP` go,
 * the second as `_time`. journalctl writes a field that is not valid UTF-8 (or holds control characters)
 * as an array of bytes, and a field set several times as an array of values: bytes become text.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { duration, oneOf, str, strings, type OptionSpecs } from '../../config/options.js';
import { NowAndThen } from '../../util/now-and-then.js';
import { writeFileDurably } from '../../util/durable-file.js';
import { LineSplitter } from './lines.js';
import {
  MAX_LINE_BYTES_OPTION,
  newSourceCounters,
  type Gauge,
  type Source,
  type SourceCounters,
  type SourceLine,
  type SourceSpec,
  type SourceStatus,
  type Stream,
} from './source.js';

export const PRIORITIES = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'] as const;
export type Priority = (typeof PRIORITIES)[number];

export interface JournaldSettings {
  units: string[];
  identifiers: string[];
  /** The least urgent priority read (`info` reads emerg … info). */
  priority?: Priority;
  /** `FIELD=value` matches: the same field ORed, different fields ANDed (journalctl's rule). */
  matches: string[];
  startAt: 'beginning' | 'end';
  /** Journal files in this directory instead of the system's journal. */
  journalDir?: string;
  journalctl: string;
  maxLineBytes: number;
  checkpointIntervalMs: number;
}

/** Where reading starts: after a cursor, or at the beginning or the end of the journal. */
export type JournalPosition = { after: string } | 'beginning' | 'end';

/** The arguments of the following journalctl for these settings and that position. Pure. */
export function journalctlArgs(s: JournaldSettings, from: JournalPosition): string[] {
  // --all: fields past 4096 bytes come whole, not as null.
  const args = ['--output=json', '--all', '--follow', '--no-pager', '--quiet'];
  if (s.journalDir) args.push(`--directory=${s.journalDir}`);
  if (from === 'end') args.push('--lines=0');
  else {
    args.push('--no-tail');
    // From the cursor's own entry (skipped by the source): --after-cursor steps past one more entry
    // when the cursor's entry does not match the filters (they changed since it was saved).
    if (from !== 'beginning') args.push(`--cursor=${from.after}`);
  }
  return [...args, ...journalFilters(s)];
}

/** journalctl's arguments that pick the entries these settings read. Pure. */
function journalFilters(s: JournaldSettings): string[] {
  const args: string[] = [];
  for (const u of s.units) args.push(`--unit=${u}`);
  for (const i of s.identifiers) args.push(`--identifier=${i}`);
  if (s.priority) args.push(`--priority=${s.priority}`);
  return [...args, ...s.matches];
}

/** A field's value as journalctl writes it (a string, bytes, or several of either) as text. */
function text(v: unknown): unknown {
  if (!Array.isArray(v)) return v;
  if (v.every((b) => typeof b === 'number')) return Buffer.from(v as number[]).toString('utf8');
  return v.map(text);
}

/** `__REALTIME_TIMESTAMP` (microseconds since the epoch) as RFC 3339 with microseconds. */
function timeOf(micros: string): string | undefined {
  if (!/^\d{1,17}$/.test(micros)) return undefined;
  const us = BigInt(micros);
  const iso = new Date(Number(us / 1000n)).toISOString();
  return `${iso.slice(0, 23)}${String(us % 1000n).padStart(3, '0')}Z`;
}

/** Where a member `"key":"value"` (a value without quotes or escapes) sits in a line of JSON. */
interface Member {
  start: number;
  end: number;
  value: string;
}

function member(line: string, key: string): Member | undefined {
  // A key's quotes cannot appear unescaped inside a string value: the first match is the member.
  const at = line.indexOf(`"${key}":"`);
  if (at < 0) return undefined;
  const from = at + key.length + 4;
  const close = line.indexOf('"', from);
  if (close < 0 || line.lastIndexOf('\\', close) >= from) return undefined;
  return { start: at, end: close + 1, value: line.slice(from, close) };
}

/** The line without a member and the comma that joins it to its neighbour. */
function cut(line: string, m: Member): string {
  if (line.charCodeAt(m.end) === 0x2c) return line.slice(0, m.start) + line.slice(m.end + 1);
  if (line.charCodeAt(m.start - 1) === 0x2c) return line.slice(0, m.start - 1) + line.slice(m.end);
  return line.slice(0, m.start) + line.slice(m.end);
}

/**
 * One line of `journalctl --output=json` as an event's JSON text, and the entry's cursor. Pure. Undefined
 * for a line that is not an entry (not a JSON object).
 *
 * journalctl writes an entry's fields in a different order each time, so objects made from the lines
 * have ever new shapes, which V8 handles at several times the cost of one parse. An entry without bytes or
 * repeated fields (no value is an array) is therefore rewritten as text: the cursor and the realtime stamp
 * cut out, `_time` put first.
 */
export function journalEvent(line: string): { event: string; cursor?: string } | undefined {
  if (line.charCodeAt(0) !== 0x7b || line.charCodeAt(line.length - 1) !== 0x7d || line.includes('":[')) {
    return journalEventParsed(line);
  }
  const cursor = member(line, '__CURSOR');
  const stamp = member(line, '__REALTIME_TIMESTAMP');
  let rest = line;
  for (const m of [cursor, stamp].filter((x) => x !== undefined).sort((x, y) => y.start - x.start)) rest = cut(rest, m);
  const time = stamp ? timeOf(stamp.value) : undefined;
  const body = rest.slice(1);
  const event = time ? `{"_time":"${time}"${body === '}' ? '' : ','}${body}` : rest;
  return { event, cursor: cursor?.value };
}

/** The general case: entries holding bytes or a field set several times, read as JSON. */
function journalEventParsed(line: string): { event: string; cursor?: string } | undefined {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return undefined;
  const fields = entry as Record<string, unknown>;
  const cursor = typeof fields.__CURSOR === 'string' ? fields.__CURSOR : undefined;
  const time = typeof fields.__REALTIME_TIMESTAMP === 'string' ? timeOf(fields.__REALTIME_TIMESTAMP) : undefined;
  const out: Record<string, unknown> = time ? { _time: time } : {};
  for (const [k, v] of Object.entries(fields)) {
    if (k === '__CURSOR' || k === '__REALTIME_TIMESTAMP') continue;
    out[k] = text(v);
  }
  return { event: JSON.stringify(out), cursor };
}

/** What a journald source keeps across restarts: the cursor after which nothing is durable yet. */
interface JournalCheckpoint {
  cursor: string;
}

/** Waits between restarts of a journalctl that ended: from a second up to half a minute. */
const RESTART_MS = [1000, 2000, 5000, 10_000, 30_000];

export class JournaldSource implements Source {
  readonly counters: SourceCounters & { restarts: number; unreadable: number };
  private readonly stream: Stream;
  /** Cursors of entries emitted and not yet durable, in order. */
  private pending: { offset: number; cursor: string }[] = [];
  private offset = 0;
  /** The cursor of the last entry durable downstream (what the checkpoint says). */
  private durable: string | undefined;
  /** The cursor of the last entry emitted (where a restarted journalctl goes on from). */
  private emitted: string | undefined;
  private dirty = false;
  private savedAt = 0;
  private saving: Promise<void> = Promise.resolve();
  private child: ChildProcess | undefined;
  private stopping = false;
  private running: Promise<void> | undefined;
  private saveTimer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private readonly unreadableSaid = new NowAndThen();
  /** What keeps entries from being read now (journalctl missing, failing, refused the journal). */
  private problem: string | undefined;
  /**
   * The last entry these filters matched when the source started: reading it is catching up with the
   * journal (journalctl --follow marks no end of what was there). Undefined once said, or with no backlog.
   */
  private backlog: { last: string; lines: number; bytes: number; at: number } | undefined;

  constructor(
    readonly name: string,
    private readonly s: JournaldSettings,
    private readonly stateDir: string,
    private readonly log: { info(o: object, m: string): void; warn(o: object, m: string): void },
    counters?: SourceCounters & { restarts: number; unreadable: number },
  ) {
    this.counters = counters ?? { ...newSourceCounters(), restarts: 0, unreadable: 0 };
    this.stream = { id: `${name}:journal`, source: name, acknowledge: (offset) => this.acknowledge(offset) };
  }

  get checkpointFile(): string {
    return join(this.stateDir, 'checkpoints', `${this.name.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
  }

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.durable = this.readCheckpoint();
    this.emitted = this.durable;
    // The end is the end as of this start (the last entry's cursor), not wherever journalctl finds it later.
    let from: JournalPosition = 'beginning';
    if (this.durable) {
      if (await this.cursorExists(this.durable)) from = { after: this.durable };
      else {
        from = 'beginning';
        this.log.warn(
          { source: this.name, cursor: this.durable },
          'the checkpoint cursor is no longer in the journal (vacuumed or rotated away): reading from the oldest entry',
        );
      }
    } else if (this.s.startAt === 'end') {
      from = await this.endOfJournal();
      // The end as of the first start is checkpointed at once: a stop before any new entry must not move it.
      if (typeof from !== 'string') {
        this.durable = this.emitted = from.after;
        this.dirty = true;
        await this.save();
      }
    }
    // The last entry the filters match, when one comes after where reading starts (journalctl's --lines
    // counts from the cursor, not back from the end, when both are given: two questions, then).
    const filters = journalFilters(this.s);
    const pending =
      typeof from === 'string' || (await this.firstEntry([`--after-cursor=${from.after}`, ...filters])) !== undefined;
    const last = pending ? await this.firstEntry(['--lines=1', ...filters]) : undefined;
    const lastCursor = last === undefined ? undefined : journalEvent(last)?.cursor;
    if (lastCursor) {
      const c = this.counters;
      this.backlog = { last: lastCursor, lines: c.linesIn, bytes: c.bytesIn, at: Date.now() };
    }
    this.saveTimer = setInterval(() => void this.save(), this.s.checkpointIntervalMs);
    this.saveTimer.unref();
    this.log.info(
      {
        source: this.name,
        from: typeof from === 'string' ? from : 'after cursor',
        journal: this.s.journalDir ?? 'system',
      },
      'source started: reading the journal',
    );
    this.running = this.loop(emit, from);
  }

  /** Runs journalctl, and again after a wait whenever it ends, until the source stops. */
  private async loop(emit: (l: SourceLine) => Promise<void> | undefined, first: JournalPosition): Promise<void> {
    let from = first;
    for (let failures = 0; !this.stopping;) {
      const ok = await this.follow(emit, from);
      if (this.stopping) return;
      failures = ok ? 0 : failures + 1;
      this.counters.restarts++;
      from = this.emitted ? { after: this.emitted } : from === 'end' ? 'end' : 'beginning';
      await new Promise<void>((r) => {
        const t = setTimeout(r, RESTART_MS[Math.min(failures, RESTART_MS.length - 1)]);
        this.wake = () => {
          clearTimeout(t);
          r();
        };
      });
    }
  }

  /** One journalctl, read to its end; false when it failed. */
  private async follow(emit: (l: SourceLine) => Promise<void> | undefined, from: JournalPosition): Promise<boolean> {
    const child = spawn(this.s.journalctl, journalctlArgs(this.s, from), { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const stderr: string[] = [];
    createInterface({ input: child.stderr! }).on('line', (l) => {
      if (stderr.length < 20) stderr.push(l);
      // journalctl goes on without the files it may not read, saying so once.
      if (/insufficient permissions|no journal files|failed to/i.test(l)) this.fail(`journalctl: ${l}`);
    });
    const exited = new Promise<{ code: number | null; error?: Error }>((resolve) => {
      child.once('error', (error) => resolve({ code: null, error }));
      child.once('close', (code) => resolve({ code }));
    });
    // The entry at the cursor journalctl starts from is one the source already had.
    let skip = typeof from === 'string' ? undefined : from.after;
    const take = async (line: string, truncated: boolean): Promise<void> => {
      if (this.stopping || line === '') return;
      const entry = truncated ? undefined : journalEvent(line);
      if (!entry) {
        // An entry past max_line_bytes (or not JSON) cannot be read as one: counted, said, not shipped whole.
        this.counters.unreadable++;
        this.unreadableSaid.hit((count) =>
          this.log.warn(
            { source: this.name, bytes: Buffer.byteLength(line), truncated, count },
            'journal entries could not be read (longer than max_line_bytes, or not JSON): skipped',
          ),
        );
        return;
      }
      if (skip !== undefined) {
        const first = entry.cursor === skip;
        skip = undefined;
        if (first) return;
      }
      if (this.problem && !/permissions/.test(this.problem)) this.problem = undefined;
      this.offset++;
      this.counters.linesIn++;
      this.counters.bytesIn += line.length + 1;
      if (entry.cursor) {
        this.pending.push({ offset: this.offset, cursor: entry.cursor });
        this.emitted = entry.cursor;
        if (entry.cursor === this.backlog?.last) this.caughtUp(this.backlog);
      }
      await emit({
        text: entry.event,
        truncated: false,
        structured: true,
        stream: this.stream,
        offset: this.offset,
        generation: 0,
      });
    };
    // Only whole lines: journalctl ends every entry with a newline, so a last line without one is an entry
    // cut off by journalctl's end, read again from the cursor when it starts anew.
    const splitter = new LineSplitter(this.s.maxLineBytes);
    try {
      for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
        splitter.feed(chunk);
        for (let l = splitter.next(); l; l = splitter.next()) await take(l.text, l.truncated);
      }
    } catch {
      // the stream ends with the process; its end is read below
    }
    const { code, error } = await exited;
    this.child = undefined;
    if (this.stopping) return true;
    if (error) {
      this.fail(
        (error as NodeJS.ErrnoException).code === 'ENOENT'
          ? `journalctl not found (${this.s.journalctl}): install systemd's journalctl or set journalctl_path`
          : `journalctl could not be started: ${error.message}`,
      );
      return false;
    }
    this.fail(
      `journalctl ended (exit code ${code})${stderr.length ? `: ${stderr.join('; ')}` : ''}; starting it again`,
    );
    return code === 0;
  }

  /** Says that the entries there at the start are read, and how many. */
  private caughtUp(since: { lines: number; bytes: number; at: number }): void {
    this.backlog = undefined;
    this.log.info(
      {
        source: this.name,
        lines: this.counters.linesIn - since.lines,
        bytes: this.counters.bytesIn - since.bytes,
        seconds: Math.round((Date.now() - since.at) / 100) / 10,
      },
      'caught up',
    );
  }

  private fail(problem: string): void {
    if (this.problem === problem) return;
    this.problem = problem;
    this.log.warn({ source: this.name }, problem);
  }

  /** Whether the journal still holds the entry of this cursor (it may have been vacuumed since). */
  private async cursorExists(cursor: string): Promise<boolean> {
    const first = await this.firstEntry([`--cursor=${cursor}`]);
    return first !== undefined && journalEvent(first)?.cursor === cursor;
  }

  /** After the journal's last entry as it is now, or its beginning when it is empty. */
  private async endOfJournal(): Promise<JournalPosition> {
    const last = await this.firstEntry(['--lines=1']);
    const cursor = last === undefined ? undefined : journalEvent(last)?.cursor;
    return cursor ? { after: cursor } : 'beginning';
  }

  /** The first line a one-off journalctl with these arguments writes (unfiltered unless they filter). */
  private async firstEntry(extra: string[]): Promise<string | undefined> {
    const args = ['--output=json', '--all', '--no-pager', '--quiet', ...extra];
    if (this.s.journalDir) args.push(`--directory=${this.s.journalDir}`);
    const child = spawn(this.s.journalctl, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    return new Promise<string | undefined>((resolve) => {
      const lines = createInterface({ input: child.stdout! });
      lines.once('line', (l) => {
        resolve(l);
        lines.close();
        child.kill();
      });
      lines.once('close', () => resolve(undefined));
      child.once('error', () => resolve(undefined));
    });
  }

  private acknowledge(offset: number): void {
    let cursor: string | undefined;
    let n = 0;
    while (n < this.pending.length && this.pending[n]!.offset <= offset) cursor = this.pending[n++]!.cursor;
    if (n === 0) return;
    this.pending = this.pending.slice(n);
    this.durable = cursor;
    this.dirty = true;
  }

  private readCheckpoint(): string | undefined {
    let text: string;
    try {
      text = readFileSync(this.checkpointFile, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    try {
      const cp = JSON.parse(text) as Partial<JournalCheckpoint>;
      return typeof cp.cursor === 'string' && cp.cursor ? cp.cursor : undefined;
    } catch (e) {
      throw new Error(
        `checkpoint file ${this.checkpointFile} is not valid JSON (${(e as Error).message}); move it away to start over`,
      );
    }
  }

  /** Writes the durable cursor if it moved; saves do not overlap. */
  private save(): Promise<void> {
    this.saving = this.saving.then(async () => {
      if (!this.dirty || !this.durable) return;
      this.dirty = false;
      try {
        await writeFileDurably(this.checkpointFile, JSON.stringify({ version: 1, cursor: this.durable }));
        this.savedAt = Date.now();
      } catch (e) {
        this.dirty = true;
        this.log.warn({ source: this.name, err: e, file: this.checkpointFile }, 'journal checkpoint not saved');
      }
    });
    return this.saving;
  }

  finished(): Promise<void> {
    return new Promise(() => undefined); // the journal is followed until the agent stops
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    this.child?.kill('SIGTERM');
    await this.running;
  }

  async close(): Promise<void> {
    clearInterval(this.saveTimer);
    await this.save();
  }

  status(): SourceStatus {
    return this.problem ? { warnings: [this.problem], degraded: true } : { warnings: [] };
  }

  gauges(): Gauge[] {
    const labels = { source: this.name };
    return [
      {
        name: 'ferry_source_journal_restarts_total',
        help: 'Times journalctl ended and was started again',
        labels,
        value: this.counters.restarts,
      },
      {
        name: 'ferry_source_journal_unreadable_total',
        help: 'Journal entries that could not be read (longer than max_line_bytes)',
        labels,
        value: this.counters.unreadable,
      },
      {
        name: 'ferry_source_checkpoint_age_seconds',
        help: 'Seconds since the checkpoints were last written',
        labels,
        value: this.savedAt ? (Date.now() - this.savedAt) / 1000 : 0,
      },
    ];
  }
}

const JOURNALD_OPTIONS = {
  units: strings([]).doc('systemd units whose entries are read (`nginx.service`); any of them').shown('all'),
  identifiers: strings([]).doc('syslog identifiers (`SYSLOG_IDENTIFIER`, `sshd`) whose entries are read').shown('all'),
  priority: oneOf(PRIORITIES)
    .doc(
      `the least urgent priority read (\`info\` reads \`emerg\` … \`info\`): one of ${PRIORITIES.map((p) => `\`${p}\``).join(', ')}`,
    )
    .shown('all'),
  matches: strings([])
    .doc('journal matches `FIELD=value` (`_TRANSPORT=kernel`): the same field ORed, different fields ANDed')
    .shown('none')
    .check((ms) =>
      ms
        .map((m) => (/^[A-Z0-9_]+=/.test(m) ? undefined : `"${m}" is not FIELD=value (an upper-case journal field)`))
        .find(Boolean),
    ),
  start_at: oneOf(['beginning', 'end'], 'end').doc(
    'where the first start reads from, without a checkpoint: the oldest entry or new entries only',
  ),
  journal_dir: str(undefined, { minLength: 0 })
    .doc("journal files in this directory (a container mounting the host's `/var/log/journal`)")
    .shown("the system's journal"),
  journalctl_path: str('journalctl').doc('the journalctl program'),
  max_line_bytes: MAX_LINE_BYTES_OPTION,
  checkpoint_interval: duration('1s').doc('how often the cursor of the last durable entry is saved'),
} satisfies OptionSpecs;

export const journaldSource: SourceSpec<JournaldSettings, typeof JOURNALD_OPTIONS> = {
  type: 'journald',
  summary: 'the systemd journal, through journalctl, from a cursor checkpoint',
  options: JOURNALD_OPTIONS,
  configure: (v) => ({
    units: v.units,
    identifiers: v.identifiers,
    priority: v.priority,
    matches: v.matches,
    startAt: v.start_at,
    // Empty (an unset environment variable) is the system's journal.
    journalDir: v.journal_dir || undefined,
    journalctl: v.journalctl_path,
    maxLineBytes: v.max_line_bytes,
    checkpointIntervalMs: v.checkpoint_interval,
  }),
  create: (s, ctx) =>
    new JournaldSource(
      ctx.name,
      s,
      ctx.dataDir,
      { info: (o, m) => ctx.log.info(o, m), warn: (o, m) => ctx.log.warn(o, m) },
      ctx.counters(() => ({ ...newSourceCounters(), restarts: 0, unreadable: 0 })),
    ),
};
