/**
 * Where each file source stopped: for each file (by device, inode and the fingerprint of its first bytes),
 * the offset up to which its lines are durable downstream. Saved as one JSON file written atomically
 * (temp file, fsync, rename, fsync of the directory), so a crash leaves the old or the new version, never
 * a torn one.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export interface Checkpoint {
  path: string;
  dev: number;
  ino: number;
  /** Length and hash of the first bytes when last seen (fewer than the fingerprint size for short files). */
  fpLen: number;
  fp: string;
  offset: number;
  /** Unix ms of the last update; entries of files not seen for `ttlMs` are forgotten. */
  updatedAt: number;
}

const TTL_MS = 7 * 24 * 3600 * 1000;

export class CheckpointFile {
  private readonly entries = new Map<string, Checkpoint>();
  private dirty = false;
  /** Unix ms of the last successful save. */
  savedAt = 0;

  private constructor(readonly file: string) {}

  static key(dev: number, ino: number): string {
    return `${dev}:${ino}`;
  }

  /** Loads the file; a missing one is an empty set, a corrupt one an error naming the file. */
  static open(file: string): CheckpointFile {
    const c = new CheckpointFile(file);
    let text: string | undefined;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (text !== undefined) {
      let doc: { files?: Checkpoint[] };
      try {
        doc = JSON.parse(text) as { files?: Checkpoint[] };
      } catch (e) {
        throw new Error(`checkpoint file ${file} is not valid JSON (${(e as Error).message}); move it away to start over`);
      }
      for (const cp of doc.files ?? []) c.entries.set(CheckpointFile.key(cp.dev, cp.ino), cp);
    }
    return c;
  }

  get(dev: number, ino: number): Checkpoint | undefined {
    return this.entries.get(CheckpointFile.key(dev, ino));
  }

  set(cp: Checkpoint): void {
    this.entries.set(CheckpointFile.key(cp.dev, cp.ino), cp);
    this.dirty = true;
  }

  delete(dev: number, ino: number): void {
    if (this.entries.delete(CheckpointFile.key(dev, ino))) this.dirty = true;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Writes the entries if anything changed since the last save. */
  save(now = Date.now()): void {
    if (!this.dirty) return;
    for (const [k, cp] of this.entries) if (now - cp.updatedAt > TTL_MS) this.entries.delete(k);
    const body = JSON.stringify({ version: 1, files: [...this.entries.values()] });
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, body);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    const dir = openSync(dirname(this.file), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
    this.dirty = false;
    this.savedAt = now;
  }
}
