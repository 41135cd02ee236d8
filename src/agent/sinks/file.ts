/**
 * The `file` sink: appends NDJSON batches to files named by a template (`{{dataset}}`, and the date and
 * time the batch is written, UTC: `%Y-%m-%d`), optionally gzip or zstd (members and frames appended one
 * after another, which every reader reads as one stream). A batch counts as delivered once it is written
 * and fsynced. A file past `max_bytes` is followed by the next part (`app~1.ndjson`); a new date starts a
 * new file. A file from an earlier run is never appended to: a crash may have left a torn batch at its end,
 * and the batch is written again, whole, into the next part.
 */
import { mkdir, open, stat, type FileHandle } from 'node:fs/promises';
import { errnoWords } from '../../util/errno-words.js';
import { dirname, extname } from 'node:path';
import { bytes, oneOf, str, type OptionSpecs } from '../../config/options.js';
import { compress, decompress, type Codec } from '../../util/codec.js';
import { syncDir } from '../../util/durable-file.js';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import type { Destination, Encoding, SendOutcome, Sink, SinkSpec } from './sink.js';

interface FileSettings {
  path: string;
  compression: Codec;
  maxBytes: number;
}

/** Files open at once: each dataset writes one, and a date passing leaves the old ones to close. */
const MAX_OPEN_FILES = 16;
/** Files of this run remembered to append to again once closed. */
const MAX_REMEMBERED_FILES = 4096;

/** A dataset name put into a path: no separators, no `..`, as Axiom's dataset names are. */
const SAFE_DATASET = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

const SUFFIX: Record<Codec, string> = { none: '', gzip: '.gz', zstd: '.zst' };

/**
 * A batch's lines are separated, not ended, by newlines: each batch is followed by one, compressed as a
 * member or frame of its own, so the next batch's first line starts a line of its own.
 */
const NEWLINE: Record<Codec, Buffer> = {
  none: Buffer.from('\n'),
  gzip: gzipSync('\n'),
  zstd: zstdCompress(Buffer.from('\n')),
};

interface OpenFile {
  /** The path the template gave, with the compression's suffix: the name of part 0. */
  base: string;
  part: number;
  path: string;
  fh: FileHandle;
  size: number;
}

export class FileSink implements Sink {
  readonly encoding: Encoding;
  /** By base path, least recently written first. */
  private readonly files = new Map<string, OpenFile>();
  /**
   * The part of each base path this run writes and its size, open or not: a file closed to keep the open
   * ones few is appended to again when its dataset comes back (it holds only whole batches of this run).
   */
  private readonly current = new Map<string, { part: number; path: string; size: number }>();
  /** Writes one after another: a file's parts and sizes stay in order whatever the sink's concurrency. */
  private writing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly s: FileSettings,
    private readonly dataset: string,
    private readonly now: () => Date = () => new Date(),
    /** The sink's name, for messages that name the key of its path (`sinks.<name>.path`). */
    private readonly name = 'file',
  ) {
    this.encoding = s.compression;
  }

  async send(batch: Buffer, encoding: Encoding, to?: Destination): Promise<SendOutcome> {
    const dataset = to?.dataset ?? this.dataset;
    if (!SAFE_DATASET.test(dataset))
      return {
        kind: 'refused',
        status: 400,
        reason: `dataset "${dataset}" cannot be part of a file name (letters, digits, _ . - only)`,
        config: false,
      };
    // A batch queued while the sink had another compression is written in this one.
    const data =
      encoding === this.s.compression ? batch : await compress(decompress(batch, encoding), this.s.compression);
    const base = `${renderPath(this.s.path, dataset, this.now())}${SUFFIX[this.s.compression]}`;
    const write = this.writing.then(() => this.append(base, data));
    this.writing = write.catch(() => undefined);
    return write;
  }

  private async append(base: string, data: Buffer): Promise<SendOutcome> {
    let f: OpenFile | undefined;
    try {
      f = await this.fileFor(base, data.length);
      const whole = Buffer.concat([data, NEWLINE[this.s.compression]]);
      let at = 0;
      while (at < whole.length) at += (await f.fh.write(whole, at, whole.length - at)).bytesWritten;
      await f.fh.datasync();
      f.size += whole.length;
      return { kind: 'delivered' };
    } catch (err) {
      // Cut back what was written of the batch, so the file holds whole batches; it is written again into
      // the same file. A file that cannot be cut back is left for the next part.
      if (
        f &&
        !(await f.fh.truncate(f.size).then(
          () => true,
          () => false,
        ))
      ) {
        await this.closeFile(f);
        this.current.delete(base);
      }
      const where = f?.path ?? base;
      const e = err as NodeJS.ErrnoException;
      // mkdir -p says EEXIST when a part of the path is a file.
      const words = errnoWords(e.code === 'EEXIST' && e.syscall === 'mkdir' ? 'ENOTDIR' : e.code);
      const message = words ? `sinks.${this.name}.path: ${where}: ${words}` : `${where}: ${e.message}`;
      return { kind: 'retry', trouble: { kind: 'failing', message } };
    }
  }

  /** The open file of a base path with room for `size` more bytes, opening the next part when it has none. */
  private async fileFor(base: string, size: number): Promise<OpenFile> {
    let f = this.files.get(base);
    const mine = this.current.get(base);
    if (!f && mine) f = await this.reopen(base, mine);
    if (f && f.size > 0 && f.size + size > this.s.maxBytes) {
      await this.closeFile(f);
      f = await this.openPart(base, f.part + 1);
    }
    f ??= await this.openPart(base, 0);
    this.current.delete(base);
    this.current.set(base, f);
    // What is remembered of closed files is bounded too (the oldest dates go first).
    if (this.current.size > MAX_REMEMBERED_FILES) this.current.delete(this.current.keys().next().value!);
    // Least recently written last: the first is closed when too many are open.
    this.files.delete(base);
    this.files.set(base, f);
    if (this.files.size > MAX_OPEN_FILES) await this.closeFile(this.files.values().next().value!);
    return f;
  }

  /** A file of this run, closed to keep the open ones few, opened again to append to. */
  private async reopen(base: string, f: { part: number; path: string; size: number }): Promise<OpenFile> {
    const fh = await open(f.path, 'a');
    return { base, part: f.part, path: f.path, fh, size: f.size };
  }

  /** The first part from `from` on that does not exist yet: created, and its name made durable. */
  private async openPart(base: string, from: number): Promise<OpenFile> {
    await makeDirDurably(dirname(base));
    for (let part = from; ; part++) {
      const path = partPath(base, this.s.compression, part);
      const exists = await stat(path).then(
        () => true,
        () => false,
      );
      if (exists) continue;
      const fh = await open(path, 'ax', 0o640).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST') return undefined;
        throw err;
      });
      if (!fh) continue;
      await syncDir(dirname(path));
      return { base, part, path, fh, size: 0 };
    }
  }

  private async closeFile(f: OpenFile): Promise<void> {
    if (this.files.get(f.base) === f) this.files.delete(f.base);
    await f.fh.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.writing;
    await Promise.all([...this.files.values()].map((f) => this.closeFile(f)));
  }
}

/**
 * Part 0 is the base path itself; part n puts `~n` before the extension: `app.ndjson.gz` → `app~1.ndjson.gz`.
 * `~` is in no dataset name, so no dataset's file is another's part (`app.1` is a dataset name).
 */
export function partPath(base: string, compression: Codec, part: number): string {
  if (part === 0) return base;
  const plain = base.slice(0, base.length - SUFFIX[compression].length);
  const ext = extname(plain);
  return `${plain.slice(0, plain.length - ext.length)}~${part}${ext}${SUFFIX[compression]}`;
}

/** Makes a directory and its missing parents, each one's name made durable in its parent. */
async function makeDirDurably(dir: string): Promise<void> {
  const first = await mkdir(dir, { recursive: true });
  if (first === undefined) return;
  // From the first directory made down to `dir`: each new name lives in the directory above it.
  for (let d = dir; ; d = dirname(d)) {
    await syncDir(dirname(d));
    if (d === first || dirname(d) === d) break;
  }
}

const STRFTIME: Record<string, (d: Date) => string> = {
  Y: (d) => String(d.getUTCFullYear()),
  m: (d) => String(d.getUTCMonth() + 1).padStart(2, '0'),
  d: (d) => String(d.getUTCDate()).padStart(2, '0'),
  H: (d) => String(d.getUTCHours()).padStart(2, '0'),
  M: (d) => String(d.getUTCMinutes()).padStart(2, '0'),
  S: (d) => String(d.getUTCSeconds()).padStart(2, '0'),
  '%': () => '%',
};

/** The path of a batch: `{{dataset}}` and `%Y %m %d %H %M %S %%` (UTC) filled in. */
export function renderPath(template: string, dataset: string, at: Date): string {
  return template.replace(/%(.)/g, (_, c: string) => STRFTIME[c]!(at)).replace(/\{\{\s*dataset\s*\}\}/g, dataset);
}

/** What is wrong with a path template, if anything. */
function templateProblem(template: string): string | undefined {
  for (const m of template.matchAll(/%(.?)/g))
    if (!m[1] || !STRFTIME[m[1]])
      return `"%${m[1] ?? ''}" is not a date field this sink knows (%Y %m %d %H %M %S, and %% for %)`;
  for (const m of template.matchAll(/\{\{([^}]*)\}\}/g))
    if (m[1]!.trim() !== 'dataset') return `"{{${m[1]}}}" is not a field this sink knows ({{dataset}})`;
  if (template.endsWith('/')) return 'the path names a directory; end it with a file name';
  return undefined;
}

const FILE_OPTIONS = {
  path: str(undefined, { minLength: 1 })
    .required()
    .doc(
      "the file template: `{{dataset}}` (the batch's dataset) and the UTC date and time it is written (`%Y %m %d %H %M %S`), e.g. `/var/lib/ferry/archive/{{dataset}}-%Y-%m-%d.ndjson`; `.gz` or `.zst` is added for a compression",
    )
    .check(templateProblem),
  compression: oneOf(['none', 'gzip', 'zstd'], 'none').doc(
    'each batch compressed as one or more gzip members or zstd frames appended to the file (`zcat`, `zstdcat` read it whole)',
  ),
  max_bytes: bytes('100MiB').doc(
    'a file past this size is followed by the next part (`name~1.ndjson`, `name~2.ndjson`…)',
  ),
} satisfies OptionSpecs;

export const fileSink: SinkSpec<FileSettings, typeof FILE_OPTIONS> = {
  type: 'file',
  summary:
    'NDJSON files named by dataset and date, rotated by size, optionally gzip or zstd, fsynced before acknowledging',
  options: FILE_OPTIONS,
  datasetOptional: true,
  configure: (v) => ({ path: v.path, compression: v.compression, maxBytes: v.max_bytes }),
  describe: (s) => ({ path: s.path, compression: s.compression }),
  create: (s, ctx) => new FileSink(s, ctx.dataset, undefined, ctx.name),
};
