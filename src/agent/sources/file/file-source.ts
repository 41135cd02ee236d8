/**
 * The `file` source: tails every file matching its include globs (and none of its exclude globs). Files
 * are found by a scan of the globs at start and at every poll, so no file can be missed whatever the
 * timing of a rotation; chokidar's events only make a new file show up sooner. Files are read by one loop,
 * a bounded number of bytes per file per round, so one busy file cannot starve the others, and every emit
 * is awaited, so a full queue slows reading down and the files themselves are the buffer.
 *
 * A file is known by its device and inode plus the fingerprint of its first bytes (so a recycled inode
 * with other content is a new file). Files first seen at start begin at `start_at`; files that appear
 * later, and files whose checkpoint no longer fits, are read from the beginning.
 */
import { watch, type FSWatcher } from 'chokidar';
import { existsSync, statSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import picomatch from 'picomatch';
import { glob } from 'tinyglobby';
import { bool, duration, globs, int, oneOf, str, type OptionSpecs } from '../../../config/options.js';
import { datasetNameProblem } from '../../../service/store/dataset-name.js';
import { errnoWords } from '../../../util/errno-words.js';
import { CheckpointFile } from './checkpoints.js';
import { fingerprint, FileTailer, type TailerHooks, type TailerOptions } from './tailer.js';
import {
  MAX_LINE_BYTES_OPTION,
  newSourceCounters,
  type Gauge,
  type Source,
  type SourceCounters,
  type SourceLine,
  type SourceSpec,
  type SourceStatus,
} from '../source.js';

export interface FileSourceOptions extends TailerOptions {
  include: string[];
  exclude: string[];
  startAt: 'beginning' | 'end';
  pollIntervalMs: number;
  checkpointIntervalMs: number;
  /** Directory of the agent's state; the checkpoints go to checkpoints/<source name>.json in it. */
  stateDir: string;
  /** Bytes per read. One buffer of this size serves every file of the source, read one after another. */
  chunkBytes: number;
  /** Problems that have no caller: a file that cannot be opened or read, a checkpoint that cannot be saved. */
  onError: (err: unknown, context: Record<string, unknown>) => void;
  /** What the source does, for the log: files opened, rotated, truncated, released; patterns matching nothing. */
  onInfo?: (msg: string, context: Record<string, unknown>) => void;
  onWarning?: (msg: string, context: Record<string, unknown>) => void;
  /** Patterns matching nothing are expected (files some hosts do not have). */
  optional?: boolean;
}

/** Counters of a file source beyond lines and bytes; they outlive the source across reloads. */
export interface FileSourceCounters extends SourceCounters {
  rotations: number;
  truncations: number;
  /** Files found and not readable, by reason (`permission_denied`…): each time one becomes unreadable. */
  fileErrors: Record<string, number>;
}

export function newFileSourceCounters(): FileSourceCounters {
  return { ...newSourceCounters(), rotations: 0, truncations: 0, fileErrors: {} };
}

/** The metric label of each cause a file cannot be read for; any other is its code in lower case. */
const UNREADABLE_REASONS: Record<string, string> = {
  EACCES: 'permission_denied',
  EPERM: 'permission_denied',
  EISDIR: 'not_a_file',
  NOT_A_FILE: 'not_a_file',
  EMFILE: 'too_many_open_files',
  ENFILE: 'too_many_open_files',
  ELOOP: 'symlink_loop',
};

/** Why a file cannot be read, as a metric label and in words. */
export function unreadableReason(code: string | undefined): { reason: string; words: string } {
  const reason = (code && UNREADABLE_REASONS[code]) ?? (code ?? 'unknown').toLowerCase();
  const words =
    code === 'NOT_A_FILE'
      ? 'not a regular file'
      : reason === 'permission_denied'
        ? 'permission denied'
        : (errnoWords(code) ?? code ?? 'unknown error');
  return { reason, words };
}

/** How far a file was read since it was opened, for the line that says it caught up. */
interface ReadSinceOpen {
  lines: number;
  bytes: number;
  openedAt: number;
  caughtUp: boolean;
}

/** What one include pattern finds, for the start-up log, /health and the metrics. */
export interface PatternState {
  pattern: string;
  /** The directory the pattern starts from. */
  base: string;
  /** A path with no glob in it (`/var/log/syslog`). */
  literal: boolean;
  /** A literal path with no escapes either: looked up itself, not found by listing its directory. */
  plainPath: boolean;
  matches: number;
}

/** The directory a pattern starts from, and the rest; a literal path (`/var/log/syslog`) starts from its directory. */
function splitPattern(pattern: string): { base: string; glob: string } {
  const scan = picomatch.scan(pattern);
  return scan.isGlob
    ? { base: scan.base || '/', glob: scan.glob }
    : { base: dirname(pattern), glob: basename(pattern) };
}

/**
 * What a literal path matches: itself when it is a file (or a link to one), as the glob would say, without
 * listing its directory at every poll: in a crowded directory that listing was a large share of the
 * agent's time (docs/benchmarks.md).
 */
async function fileAt(path: string): Promise<string[]> {
  try {
    return (await stat(path)).isFile() ? [path] : [];
  } catch (e) {
    // A directory on the way that may not be entered: the path is put up, so that opening it says so
    // (permission denied) rather than that nothing matches. Any other failure (no such file, a name too
    // long) matches nothing, as the glob would have it.
    return (e as NodeJS.ErrnoException).code === 'EACCES' ? [path] : [];
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Bytes read from one file per round before the loop moves on to the next. */
const ROUND_BUDGET = 4 * 1024 * 1024;

/**
 * Bytes per read. Reads run on libuv's thread pool, where they wait behind the batches' stages being
 * compressed, so fewer and larger reads keep the event loop fed where lines go on in runs; where each
 * line is decoded into an event, the event loop is the bound and larger reads only cost memory
 * (docs/benchmarks.md: 256 KiB against 1 MiB).
 */
const READ_BYTES = { runs: 1024 * 1024, decoded: 256 * 1024 };

export class FileSource implements Source {
  readonly counters: FileSourceCounters;
  private readonly tailers = new Map<string, FileTailer>();
  private readonly candidates = new Map<string, boolean>(); // path → found in the initial scan
  private readonly patterns: PatternState[];
  private lastScan = 0;
  private readonly isIncluded: (p: string) => boolean;
  private readonly isExcluded: (p: string) => boolean;
  /** Files found that cannot be read, and why: in /health until they can. */
  private readonly unreadable = new Map<string, { reason: string; words: string }>();
  private readonly readSinceOpen = new WeakMap<FileTailer, ReadSinceOpen>();
  /**
   * What every read goes into, in turn: two buffers, not one per read (a buffer a read adds up to tens of
   * MiB waiting for the collector); one is read into while the other's lines are handed on.
   */
  private readonly chunks: readonly [Buffer, Buffer];
  private checkpoints!: CheckpointFile;
  private watcher: FSWatcher | undefined;
  private ready = false;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private saveTimer: NodeJS.Timeout | undefined;
  private baseTimer: NodeJS.Timeout | undefined;
  private missingBases: string[] = [];
  private readonly hooks: TailerHooks;

  constructor(
    readonly name: string,
    private readonly o: FileSourceOptions,
    counters?: FileSourceCounters,
  ) {
    this.counters = counters ?? newFileSourceCounters();
    this.chunks = [Buffer.allocUnsafeSlow(o.chunkBytes), Buffer.allocUnsafeSlow(o.chunkBytes)];
    const include = o.include.map((p) => resolve(p));
    this.patterns = include.map((pattern) => {
      const literal = !picomatch.scan(pattern).isGlob;
      return {
        pattern,
        base: splitPattern(pattern).base,
        literal,
        plainPath: literal && !pattern.includes('\\'),
        matches: 0,
      };
    });
    this.hooks = {
      acknowledged: (t) => this.remember(t),
      changed: (t, what, detail) => {
        if (what === 'truncated') this.counters.truncations++;
        this.info(`file ${what}`, { path: t.path, ...detail });
      },
    };
    this.isIncluded = picomatch(include, { dot: true });
    // A path pattern matches the whole path, a name pattern the file's name: picomatch's basename option
    // would make a path pattern with `**` match nothing, so the two kinds are matched apart.
    const paths = o.exclude.filter((p) => p.includes('/')).map((p) => resolve(p));
    const names = o.exclude.filter((p) => !p.includes('/'));
    const byPath = paths.length ? picomatch(paths, { dot: true }) : () => false;
    const byName = names.length ? picomatch(names, { dot: true, basename: true }) : () => false;
    this.isExcluded = (path: string) => byPath(path) || byName(path);
  }

  get checkpointFile(): string {
    return join(this.o.stateDir, 'checkpoints', `${this.name.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
  }

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.checkpoints = CheckpointFile.open(this.checkpointFile);
    const include = this.o.include.map((p) => resolve(p));
    const bases = [...new Set(this.patterns.map((p) => p.base))];
    const deep = include.some((p) => p.includes('**'));
    const depth = deep ? undefined : Math.max(...include.map((p) => splitPattern(p).glob.split('/').length - 1));
    // The watcher is a shortcut: the scan at every poll finds whatever it misses. `atomic` is off because
    // it reports a path unlinked and created again within 100 ms (a rename rotation) as a change, not an add.
    this.watcher = watch(bases, {
      ignoreInitial: true,
      persistent: true,
      depth,
      atomic: false,
      ignored: (p, stats) => stats?.isFile() === true && !this.matches(p),
    });
    this.watcher.on('add', (p) => this.consider(p));
    this.watcher.on('error', (err) => this.o.onError(err, { source: this.name, what: 'watch' }));
    await new Promise<void>((r) => this.watcher!.once('ready', () => r()));
    // A base directory that does not exist yet (./logs before the application's first start) cannot be
    // watched: look for it now and then, and watch it once it is there.
    this.missingBases = bases.filter((b) => !existsSync(b));
    if (this.missingBases.length) {
      this.baseTimer = setInterval(
        () => {
          const found = this.missingBases.filter((b) => existsSync(b));
          if (found.length === 0) return;
          this.missingBases = this.missingBases.filter((b) => !found.includes(b));
          this.watcher?.add(found);
          if (this.missingBases.length === 0) clearInterval(this.baseTimer);
        },
        Math.max(1000, this.o.pollIntervalMs * 4),
      );
      this.baseTimer.unref();
    }
    // Files there at start are opened now, so start_at: end means the end as of this start.
    await this.scan();
    this.ready = true;
    await this.openCandidates();
    this.info('source started', {
      include: this.o.include,
      ...(this.o.exclude.length ? { exclude: this.o.exclude } : {}),
      files: [...this.tailers.values()].map((t) => t.path).slice(0, 50),
      open: this.tailers.size,
    });
    for (const p of this.patterns) if (p.matches === 0 && !this.unreadable.has(p.pattern)) this.warnUnmatched(p);
    this.saveTimer = setInterval(() => void this.saveCheckpoints(), this.o.checkpointIntervalMs);
    this.saveTimer.unref();
    this.loopDone = this.loop(emit);
  }

  finished(): Promise<void> {
    return new Promise(() => undefined); // files are tailed until the agent stops
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.baseTimer);
    this.wake?.();
    await this.watcher?.close();
    await this.loopDone;
  }

  async close(): Promise<void> {
    clearInterval(this.saveTimer);
    await this.saveCheckpoints();
    await Promise.all([...this.tailers.values()].map((t) => t.close()));
    this.tailers.clear();
  }

  status(): SourceStatus {
    // A file that is there and cannot be read is a problem on any host, optional or not.
    const unreadable = [...this.unreadable].map(([path, why]) => `sources.${this.name}.include: ${path}: ${why.words}`);
    const degraded = unreadable.length > 0 ? { degraded: true } : {};
    // An optional source reading no file is as configured: neither degraded nor warned about.
    if (this.o.optional)
      return this.tailers.size > 0
        ? { files: this.tailers.size, warnings: unreadable, ...degraded }
        : { warnings: unreadable, ...degraded };
    return {
      files: this.tailers.size,
      ...degraded,
      warnings: unreadable.concat(
        this.patterns
          .filter((p) => p.matches === 0 && !this.unreadable.has(p.pattern))
          .map(
            (p) =>
              `include pattern ${p.pattern} matches no file${existsSync(p.base) ? '' : ` (directory ${p.base} does not exist)`}`,
          ),
      ),
    };
  }

  gauges(): Gauge[] {
    const out: Gauge[] = [
      {
        name: 'ferry_source_open_files',
        help: 'Files the source holds open',
        labels: { source: this.name },
        value: this.tailers.size,
      },
      {
        name: 'ferry_source_checkpoint_age_seconds',
        help: 'Seconds since the checkpoints were last written',
        labels: { source: this.name },
        value: this.checkpoints?.savedAt ? (Date.now() - this.checkpoints.savedAt) / 1000 : 0,
      },
      {
        name: 'ferry_source_rotations_total',
        help: 'Files let go after rotation or deletion, drained to their end',
        labels: { source: this.name },
        value: this.counters.rotations,
      },
      {
        name: 'ferry_source_truncations_total',
        help: 'Files found truncated and read again from the start',
        labels: { source: this.name },
        value: this.counters.truncations,
      },
      ...Object.entries(this.counters.fileErrors).map(([reason, value]) => ({
        name: 'ferry_source_file_errors_total',
        help: 'Files found that could not be read, by reason (each time one became unreadable)',
        labels: { source: this.name, reason },
        value,
      })),
      {
        name: 'ferry_source_unreadable_files',
        help: 'Files found that cannot be read now',
        labels: { source: this.name },
        value: this.unreadable.size,
      },
      {
        name: 'ferry_source_unmatched_patterns',
        help: 'Include patterns that matched no file at the last scan',
        labels: { source: this.name },
        value: this.patterns.filter((p) => p.matches === 0).length,
      },
    ];
    for (const t of this.tailers.values()) {
      out.push({
        name: 'ferry_source_file_lag_bytes',
        help: 'Bytes of a file not read yet',
        labels: { source: this.name, path: t.path },
        value: Math.max(0, t.size - t.offset),
      });
    }
    return out;
  }

  private matches(path: string): boolean {
    return this.isIncluded(path) && !this.isExcluded(path);
  }

  private consider(path: string): void {
    if (!this.matches(path)) return;
    if (!this.candidates.has(path)) this.candidates.set(path, !this.ready);
    this.wake?.();
  }

  private info(msg: string, context: Record<string, unknown>): void {
    this.o.onInfo?.(msg, { source: this.name, ...context });
  }

  private warnUnmatched(p: PatternState): void {
    const why = existsSync(p.base)
      ? 'matches no file yet'
      : `matches no file: directory ${p.base} does not exist (yet)`;
    (this.o.optional ? this.o.onInfo : this.o.onWarning)?.(`include pattern ${why}; watching for files to appear`, {
      source: this.name,
      pattern: p.pattern,
    });
  }

  /**
   * Lists what every include pattern matches now and puts up each path no active tailer reads. A path
   * whose file was renamed away is matched again as soon as a new file is there, at whatever moment it
   * appeared; a path an active tailer holds is its tailer's to check (replaced, truncated).
   */
  private async scan(): Promise<void> {
    this.lastScan = Date.now();
    // A file that could not be read and is gone now is no longer a problem to show.
    for (const path of this.unreadable.keys()) if (!existsSync(path)) this.unreadable.delete(path);
    const held = new Set<string>();
    for (const t of this.tailers.values()) if (t.state === 'active') held.add(t.path);
    for (const p of this.patterns) {
      let found: string[];
      try {
        found = p.plainPath
          ? await fileAt(p.pattern)
          : await glob(p.pattern, { absolute: true, dot: true, onlyFiles: true, expandDirectories: false });
      } catch (err) {
        this.o.onError(err, { source: this.name, pattern: p.pattern, what: 'scan' });
        continue;
      }
      let matches = 0;
      for (const path of found) {
        if (this.isExcluded(path)) continue;
        matches++;
        if (!held.has(path) && !this.candidates.has(path)) this.candidates.set(path, !this.ready);
      }
      // A literal path that is a directory matches no file: say what it is, not only that nothing matched.
      if (matches === 0 && p.literal && isDirectory(p.pattern)) this.cannotRead(p.pattern, 'EISDIR');
      if (this.ready && matches > 0 && p.matches === 0)
        this.info('include pattern matches files now', { pattern: p.pattern, files: matches });
      else if (this.ready && matches === 0 && p.matches > 0) this.warnUnmatched(p);
      p.matches = matches;
    }
  }

  private async loop(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    while (!this.stopping) {
      if (Date.now() - this.lastScan >= this.o.pollIntervalMs) await this.scan();
      await this.openCandidates();
      let read = 0;
      for (const [key, t] of this.tailers) {
        if (this.stopping) break;
        try {
          const linesBefore = this.counters.linesIn;
          const bytes = await t.step(emit, this.counters, ROUND_BUDGET, this.chunks);
          read += bytes;
          this.noteRead(t, this.counters.linesIn - linesBefore, bytes);
          if (t.state === 'draining') {
            // The file that replaces this one at its path is found by the next scan.
            if ((await t.finishIfDrained(emit, this.counters)) === 'done') {
              this.tailers.delete(key);
              this.counters.rotations++;
              this.info('file released', {
                path: t.path,
                offset: t.offset,
                why: `drained, and no new data for ${this.o.rotateWaitMs} ms`,
              });
            }
          }
        } catch (err) {
          this.o.onError(err, { source: this.name, path: t.path });
        }
      }
      if (read === 0 && !this.stopping) {
        await new Promise<void>((r) => {
          const timer = setTimeout(r, this.o.pollIntervalMs);
          this.wake = () => {
            clearTimeout(timer);
            r();
          };
        });
        this.wake = undefined;
      }
    }
  }

  private async openCandidates(): Promise<void> {
    for (const [path, initial] of this.candidates) {
      this.candidates.delete(path);
      await this.openFile(path, initial).catch((err: unknown) => this.o.onError(err, { source: this.name, path }));
    }
  }

  private async openFile(path: string, initial: boolean): Promise<void> {
    let fh;
    try {
      fh = await open(path, 'r');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') this.cannotRead(path, code);
      return;
    }
    const st = await fh.stat();
    if (!st.isFile()) {
      await fh.close();
      this.cannotRead(path, st.isDirectory() ? 'EISDIR' : 'NOT_A_FILE');
      return;
    }
    if (this.unreadable.delete(path)) this.info('file readable now', { path });
    const key = CheckpointFile.key(st.dev, st.ino);
    const known = this.tailers.get(key);
    if (known) {
      await fh.close();
      if (known && (known.path !== path || known.state === 'draining')) {
        // Renamed into another included name: its old path may already hold the file that replaced it
        // (and if not yet, the scan finds the new file whenever it comes).
        if (known.path !== path) {
          this.candidates.set(known.path, false);
          this.info('file renamed', { path, from: known.path, offset: known.offset });
        }
        known.movedTo(path);
      }
      return;
    }
    const fp = await fingerprint(fh, this.o.fingerprintBytes);
    const cp = this.checkpoints.get(st.dev, st.ino);
    let offset: number;
    let from: string;
    if (
      cp &&
      cp.fpLen <= fp.len &&
      (cp.fpLen === fp.len ? cp.fp === fp.hash : (await fingerprint(fh, cp.fpLen)).hash === cp.fp)
    ) {
      // Shrank while we were away: truncated, read it anew.
      [offset, from] = cp.offset <= st.size ? [cp.offset, 'checkpoint'] : [0, 'start (truncated since the checkpoint)'];
    } else {
      [offset, from] = initial && this.o.startAt === 'end' ? [st.size, 'end (start_at: end)'] : [0, 'start'];
    }
    const t = new FileTailer(this.name, fh, st.dev, st.ino, path, offset, fp, this.o, this.hooks);
    this.tailers.set(key, t);
    this.readSinceOpen.set(t, { lines: 0, bytes: 0, openedAt: Date.now(), caughtUp: false });
    this.remember(t);
    this.info('file opened', { path, offset, from, size: st.size });
  }

  /**
   * A file found that cannot be read: said once (the cause in words, no stack), counted by reason, and in
   * /health until a later round opens it. Each round tries it again.
   */
  private cannotRead(path: string, code: string | undefined): void {
    const why = unreadableReason(code);
    if (this.unreadable.get(path)?.reason === why.reason) return;
    this.unreadable.set(path, why);
    this.counters.fileErrors[why.reason] = (this.counters.fileErrors[why.reason] ?? 0) + 1;
    this.o.onWarning?.(`cannot read file: ${why.words}`, { source: this.name, path, reason: why.reason });
  }

  /** Counts what a round read from a file; the first round that finds nothing more says it caught up. */
  private noteRead(t: FileTailer, lines: number, bytes: number): void {
    const r = this.readSinceOpen.get(t);
    if (!r || r.caughtUp) return;
    r.lines += lines;
    r.bytes += bytes;
    if (bytes > 0 || t.offset < t.size) return;
    r.caughtUp = true;
    // A file with nothing new since its checkpoint was said by "file opened" already.
    if (r.bytes > 0)
      this.info('caught up', {
        path: t.path,
        lines: r.lines,
        bytes: r.bytes,
        seconds: Math.round((Date.now() - r.openedAt) / 100) / 10,
      });
  }

  private remember(t: FileTailer): void {
    this.checkpoints.set({
      path: t.path,
      dev: t.dev,
      ino: t.ino,
      fpLen: t.fp.len,
      fp: t.fp.hash,
      offset: t.committed,
      updatedAt: Date.now(),
    });
  }

  private saveCheckpoints(): Promise<void> {
    return (this.checkpoints?.save() ?? Promise.resolve()).catch((err: unknown) =>
      this.o.onError(err, { source: this.name, what: 'checkpoint', file: this.checkpointFile }),
    );
  }
}

/** What the config sets of a file source; the rest comes from the agent. */
export type FileSourceSettings = Pick<
  FileSourceOptions,
  | 'include'
  | 'exclude'
  | 'startAt'
  | 'maxLineBytes'
  | 'fingerprintBytes'
  | 'pollIntervalMs'
  | 'rotateWaitMs'
  | 'checkpointIntervalMs'
  | 'optional'
  | 'dataset'
>;

const FILE_OPTIONS = {
  include: globs().required().doc('file globs (`*`, `**`, `{a,b}`)'),
  exclude: globs([]).doc('globs of files not to read; one without `/` matches the file name'),
  optional: bool(false).doc(
    'files that may not exist on every host (`/var/log/syslog` where only the journal is kept): a pattern matching nothing is said at info level, not in `/health`, and a source reading no file is not degraded',
  ),
  start_at: oneOf(['beginning', 'end'], 'beginning').doc(
    'for files already there at the first start without a checkpoint; files that appear later are read whole',
  ),
  max_line_bytes: MAX_LINE_BYTES_OPTION,
  fingerprint_bytes: int(256, { min: 16, max: 65536 }).doc("bytes hashed into a file's identity"),
  poll_interval: duration('250ms').doc(
    'how often the include patterns are listed again, and idle files checked for new data, rotation and truncation',
  ),
  rotate_wait: duration('5s').doc('a rotated or deleted file is released after this long without new data'),
  checkpoint_interval: duration('1s').doc('how often checkpoints are saved'),
  dataset: str()
    .doc(
      "the dataset this source's events go to, whatever the sink's `dataset` (one sink ships several sources to their own)",
    )
    .shown("the sink's")
    .check((d) => datasetNameProblem(d)),
} satisfies OptionSpecs;

export const fileSource: SourceSpec<FileSourceSettings, typeof FILE_OPTIONS> = {
  type: 'file',
  summary: 'tails files matching globs, through rotation and truncation, from checkpoints',
  options: FILE_OPTIONS,
  configure: (v) => ({
    include: v.include,
    exclude: v.exclude,
    startAt: v.start_at,
    maxLineBytes: v.max_line_bytes,
    fingerprintBytes: v.fingerprint_bytes,
    pollIntervalMs: v.poll_interval,
    rotateWaitMs: v.rotate_wait,
    checkpointIntervalMs: v.checkpoint_interval,
    optional: v.optional,
    dataset: v.dataset,
  }),
  create: (s, ctx) =>
    new FileSource(
      ctx.name,
      {
        ...s,
        chunkBytes: ctx.decoded ? READ_BYTES.decoded : READ_BYTES.runs,
        stateDir: ctx.dataDir,
        decode: ctx.decoded,
        onError: (err, context) => ctx.log.warn({ err, ...context }, 'file source problem'),
        onInfo: (msg, context) => ctx.log.info(context, msg),
        onWarning: (msg, context) => ctx.log.warn(context, msg),
      },
      ctx.counters(newFileSourceCounters),
    ),
};
