/**
 * The `file` source: tails every file matching its include globs (and none of its exclude globs), found at
 * start and while running (chokidar watches the globs' base directories). Files are read by one loop, a
 * bounded number of bytes per file per round, so one busy file cannot starve the others, and every emit
 * is awaited, so a full queue slows reading down and the files themselves are the buffer.
 *
 * A file is known by its device and inode plus the fingerprint of its first bytes (so a recycled inode
 * with other content is a new file). Files first seen at start begin at `start_at`; files that appear
 * later, and files whose checkpoint no longer fits, are read from the beginning.
 */
import { watch, type FSWatcher } from 'chokidar';
import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import picomatch from 'picomatch';
import { CheckpointFile } from './checkpoints.js';
import { fingerprint, FileTailer, type TailerOptions } from './tailer.js';
import type { Gauge, Source, SourceCounters, SourceLine } from '../source.js';

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
}

/** Bytes read from one file per round before the loop moves on to the next. */
const ROUND_BUDGET = 4 * 1024 * 1024;

export class FileSource implements Source {
  readonly counters: SourceCounters = { linesIn: 0, bytesIn: 0, truncatedLines: 0 };
  private readonly tailers = new Map<string, FileTailer>();
  private readonly candidates = new Map<string, boolean>(); // path → found in the initial scan
  private readonly isIncluded: (p: string) => boolean;
  private readonly isExcluded: (p: string) => boolean;
  private readonly unreadable = new Set<string>();
  /** What every read goes into: one buffer, not one per read (256 KiB a read adds up to tens of MiB waiting for the collector). */
  private readonly chunk: Buffer;
  private checkpoints!: CheckpointFile;
  private watcher: FSWatcher | undefined;
  private ready = false;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private saveTimer: NodeJS.Timeout | undefined;
  private baseTimer: NodeJS.Timeout | undefined;
  private missingBases: string[] = [];
  rotations = 0;
  private releasedTruncations = 0;

  constructor(readonly name: string, private readonly o: FileSourceOptions) {
    this.chunk = Buffer.allocUnsafeSlow(o.chunkBytes);
    const include = o.include.map((p) => resolve(p));
    this.isIncluded = picomatch(include, { dot: true });
    const exclude = o.exclude.map((p) => (p.includes('/') ? resolve(p) : p));
    this.isExcluded = exclude.length ? picomatch(exclude, { dot: true, basename: true }) : () => false;
  }

  get checkpointFile(): string {
    return join(this.o.stateDir, 'checkpoints', `${this.name.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
  }

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.checkpoints = CheckpointFile.open(this.checkpointFile);
    const include = this.o.include.map((p) => resolve(p));
    const bases = [...new Set(include.map((p) => picomatch.scan(p).base || '/'))];
    const deep = include.some((p) => p.includes('**'));
    const depth = deep ? undefined : Math.max(...include.map((p) => picomatch.scan(p).glob.split('/').length - 1));
    this.watcher = watch(bases, {
      ignoreInitial: false, persistent: true, depth,
      ignored: (p, stats) => stats?.isFile() === true && !this.matches(p),
    });
    // Only new paths matter here: a file replaced at a known path is found by its tailer, which sees the
    // path name another inode, drains the old file and puts the path up again.
    this.watcher.on('add', (p) => this.consider(p));
    this.watcher.on('error', (err) => this.o.onError(err, { source: this.name, what: 'watch' }));
    await new Promise<void>((r) => this.watcher!.once('ready', () => r()));
    // A base directory that does not exist yet (./logs before the application's first start) cannot be
    // watched: look for it now and then, and watch it once it is there.
    this.missingBases = bases.filter((b) => !existsSync(b));
    if (this.missingBases.length) {
      this.baseTimer = setInterval(() => {
        const found = this.missingBases.filter((b) => existsSync(b));
        if (found.length === 0) return;
        this.missingBases = this.missingBases.filter((b) => !found.includes(b));
        this.watcher?.add(found);
        if (this.missingBases.length === 0) clearInterval(this.baseTimer);
      }, Math.max(1000, this.o.pollIntervalMs * 4));
      this.baseTimer.unref();
    }
    this.ready = true;
    // Files there at start are opened now, so start_at: end means the end as of this start.
    await this.openCandidates();
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

  gauges(): Gauge[] {
    const out: Gauge[] = [
      { name: 'ferry_source_open_files', help: 'Files the source holds open', labels: { source: this.name }, value: this.tailers.size },
      {
        name: 'ferry_source_checkpoint_age_seconds', help: 'Seconds since the checkpoints were last written',
        labels: { source: this.name }, value: this.checkpoints?.savedAt ? (Date.now() - this.checkpoints.savedAt) / 1000 : 0,
      },
      { name: 'ferry_source_rotations_total', help: 'Files let go after rotation or deletion, drained to their end', labels: { source: this.name }, value: this.rotations },
      {
        name: 'ferry_source_truncations_total', help: 'Files found truncated and read again from the start',
        labels: { source: this.name }, value: [...this.tailers.values()].reduce((a, t) => a + t.truncations, this.releasedTruncations),
      },
    ];
    for (const t of this.tailers.values()) {
      out.push({ name: 'ferry_source_file_lag_bytes', help: 'Bytes of a file not read yet', labels: { source: this.name, path: t.path }, value: Math.max(0, t.size - t.offset) });
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

  private async loop(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    while (!this.stopping) {
      await this.openCandidates();
      let read = 0;
      for (const [key, t] of this.tailers) {
        if (this.stopping) break;
        try {
          read += await t.step(emit, this.counters, ROUND_BUDGET, this.chunk);
          if (t.state === 'draining') {
            // The path may already hold the file that replaced this one.
            if (!this.candidates.has(t.path)) this.candidates.set(t.path, false);
            if (await t.finishIfDrained(emit, this.counters) === 'done') {
              this.tailers.delete(key);
              this.rotations++;
              this.releasedTruncations += t.truncations; // a counter never goes down
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
      if (code !== 'ENOENT' && !this.unreadable.has(path)) {
        this.unreadable.add(path); // said once, not every round
        this.o.onError(e, { source: this.name, path, what: 'open' });
      }
      return;
    }
    this.unreadable.delete(path);
    const st = await fh.stat();
    const key = CheckpointFile.key(st.dev, st.ino);
    const known = this.tailers.get(key);
    if (!st.isFile() || known) {
      await fh.close();
      if (known && (known.path !== path || known.state === 'draining')) {
        // Renamed into another included name: its old path may already hold the file that replaced it.
        if (known.path !== path) this.candidates.set(known.path, false);
        known.movedTo(path);
      }
      return;
    }
    const fp = await fingerprint(fh, this.o.fingerprintBytes);
    const cp = this.checkpoints.get(st.dev, st.ino);
    let offset: number;
    if (cp && cp.fpLen <= fp.len && (cp.fpLen === fp.len ? cp.fp === fp.hash : (await fingerprint(fh, cp.fpLen)).hash === cp.fp)) {
      offset = cp.offset <= st.size ? cp.offset : 0; // shrank while we were away: truncated, read it anew
    } else {
      offset = initial && this.o.startAt === 'end' ? st.size : 0;
    }
    const t = new FileTailer(this.name, fh, st.dev, st.ino, path, offset, fp, this.o, (x) => this.remember(x));
    this.tailers.set(key, t);
    this.remember(t);
  }

  private remember(t: FileTailer): void {
    this.checkpoints.set({ path: t.path, dev: t.dev, ino: t.ino, fpLen: t.fp.len, fp: t.fp.hash, offset: t.committed, updatedAt: Date.now() });
  }

  private saveCheckpoints(): Promise<void> {
    return (this.checkpoints?.save() ?? Promise.resolve())
      .catch((err: unknown) => this.o.onError(err, { source: this.name, what: 'checkpoint', file: this.checkpointFile }));
  }
}
