/**
 * Where each file source stopped: for each file (by device, inode and the fingerprint of its first bytes),
 * the offset up to which its lines are durable downstream. Saved as one JSON file written atomically
 * (temp file, fsync, rename, fsync of the directory), so a crash leaves the old or the new version, never
 * a torn one.
 */
import { readFileSync } from 'node:fs';
import { writeFileDurably } from '../../../util/durable-file.js';

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
  private saving: Promise<void> = Promise.resolve();

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
        throw new Error(
          `checkpoint file ${file} is not valid JSON (${(e as Error).message}); move it away to start over`,
        );
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

  /**
   * Writes the entries if anything changed since the last save, off the event loop. Saves do not overlap:
   * one asked for while another runs waits for it, then writes what is current.
   */
  save(now = Date.now()): Promise<void> {
    this.saving = this.saving.then(() => this.write(now));
    return this.saving;
  }

  private async write(now: number): Promise<void> {
    if (!this.dirty) return;
    for (const [k, cp] of this.entries) if (now - cp.updatedAt > TTL_MS) this.entries.delete(k);
    const body = JSON.stringify({ version: 1, files: [...this.entries.values()] });
    this.dirty = false; // changes from here on make the next save write again
    try {
      await writeFileDurably(this.file, body);
      this.savedAt = now;
    } catch (e) {
      this.dirty = true;
      throw e;
    }
  }
}
