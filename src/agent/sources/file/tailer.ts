/**
 * One watched file, read through its own open descriptor. Holding the descriptor is what makes rotation
 * safe: a file renamed or deleted while open keeps its data, so it is drained to its end before it is let
 * go, while the path is picked up again as a new file.
 *
 * Each round (step) checks whether the path still names this file (else: draining), whether the file
 * shrank (truncation or copytruncate: start over at 0, in a new generation so late acknowledgements of
 * the old content are ignored), and reads what was appended.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { stat } from 'node:fs/promises';
import { LineSplitter } from '../lines.js';
import type { SourceCounters, SourceLine, Stream } from '../source.js';

/**
 * The most bytes of lines handed on as one run, where nothing downstream reads them: a sink copies a run
 * into its batch at once, so a run is a small part of a batch's stage.
 */
const RUN_BYTES = 64 * 1024;

export interface TailerOptions {
  maxLineBytes: number;
  /** A rotated or deleted file is let go after this long without new data. */
  rotateWaitMs: number;
  fingerprintBytes: number;
  /** false: lines are handed on as bytes (nothing downstream reads their text). */
  decode?: boolean;
  /** The dataset the lines go to, when the source names one. */
  dataset?: string;
}

export interface Fingerprint {
  len: number;
  hash: string;
}

/** The hash of a file's first `bytes` bytes (fewer if the file is shorter). */
export async function fingerprint(fh: FileHandle, bytes: number): Promise<Fingerprint> {
  const buf = Buffer.alloc(bytes);
  let len = 0;
  while (len < bytes) {
    const { bytesRead } = await fh.read(buf, len, bytes - len, len);
    if (bytesRead === 0) break;
    len += bytesRead;
  }
  return { len, hash: createHash('sha256').update(buf.subarray(0, len)).digest('hex').slice(0, 32) };
}

export type StepResult = 'open' | 'done';

/** What a tailer tells its source: offsets made durable, and what happened to the file (for the log). */
export interface TailerHooks {
  acknowledged(t: FileTailer): void;
  /** The path no longer names this file (`rotated`: another file or none is there; `deleted`: no link left), or it was truncated. */
  changed(t: FileTailer, what: 'rotated' | 'deleted' | 'truncated', detail: Record<string, unknown>): void;
}

export class FileTailer implements Stream {
  readonly id: string;
  state: 'active' | 'draining' = 'active';
  /** Bytes consumed into lines (or a line begun). */
  offset: number;
  /** Bytes whose lines are durable downstream. */
  committed: number;
  generation = 0;
  /** File size at the last step, for the lag gauge. */
  size = 0;
  private readonly splitter: LineSplitter;
  private quietSince = Date.now();
  /** The source was told this file is draining (once per rotation). */
  private told = false;

  constructor(
    readonly source: string,
    private readonly fh: FileHandle,
    readonly dev: number,
    readonly ino: number,
    public path: string,
    offset: number,
    public fp: Fingerprint,
    private readonly o: TailerOptions,
    private readonly hooks: TailerHooks,
  ) {
    this.id = `${source}:${dev}:${ino}`;
    this.offset = offset;
    this.committed = offset;
    this.splitter = new LineSplitter(o.maxLineBytes, o.decode ?? true);
  }

  acknowledge(offset: number, generation: number): void {
    if (generation !== this.generation || offset <= this.committed) return;
    this.committed = offset;
    this.hooks.acknowledged(this);
  }

  /** Found again at `path` (renamed into an included name): tailing goes on there. */
  movedTo(path: string): void {
    this.path = path;
    this.state = 'active';
    this.told = false;
  }

  /**
   * One round: identity and truncation checks, then up to `budget` bytes read into `chunks`, in turn.
   * Returns bytes read. A chunk is read into again once every line of its last read was emitted (and its
   * emit awaited): a line's `raw` view is valid only until then, which is as long as a sink takes to copy
   * it in.
   */
  async step(
    emit: (l: SourceLine) => Promise<void> | undefined,
    counters: SourceCounters,
    budget: number,
    chunks: readonly [Buffer, Buffer],
  ): Promise<number> {
    if (this.state === 'active') {
      try {
        const p = await stat(this.path);
        if (p.ino !== this.ino || p.dev !== this.dev) this.startDraining();
      } catch {
        this.startDraining();
      }
    }
    const st = await this.fh.stat();
    this.size = st.size;
    if (this.state === 'draining' && !this.told) {
      this.told = true;
      this.hooks.changed(this, st.nlink === 0 ? 'deleted' : 'rotated', { unread: Math.max(0, st.size - this.offset) });
    }
    // Truncated in place (copytruncate, or `> file`): the file shrank, or it grew back past where we
    // were before we looked, which only its first bytes changing can tell.
    const replaced =
      st.size > this.offset &&
      this.offset > 0 &&
      this.fp.len > 0 &&
      (await fingerprint(this.fh, this.fp.len)).hash !== this.fp.hash;
    if (st.size < this.offset || replaced) {
      this.hooks.changed(this, 'truncated', { at: this.offset, size: st.size });
      this.generation++;
      this.offset = 0;
      this.committed = 0;
      this.splitter.reset();
      this.fp = await fingerprint(this.fh, this.o.fingerprintBytes);
      this.hooks.acknowledged(this);
    } else if (this.fp.len < this.o.fingerprintBytes && st.size > this.fp.len) {
      // A file shorter than the fingerprint when first seen: extend it as the file grows.
      this.fp = await fingerprint(this.fh, this.o.fingerprintBytes);
    }
    let read = 0;
    // Up to the size just seen: an idle file costs two stats a round, no buffer and no read. What is
    // appended meanwhile is read next round. The next read goes into the other chunk while this one's
    // lines are handed on, so the event loop does not wait for the disk (or the page cache) between them.
    const readInto = (i: number, at: number) => {
      const buf = chunks[i]!.subarray(0, Math.min(chunks[i]!.length, st.size - at));
      return this.fh.read(buf, 0, buf.length, at).then(({ bytesRead }) => ({ buf, bytesRead }));
    };
    let cur = 0;
    let reading: ReturnType<typeof readInto> | undefined =
      read < budget && this.offset < st.size ? readInto(cur, this.offset) : undefined;
    try {
      while (reading) {
        const { buf, bytesRead } = await reading;
        reading = undefined;
        if (bytesRead === 0) break;
        const base = this.offset;
        this.offset += bytesRead;
        read += bytesRead;
        counters.bytesIn += bytesRead;
        cur ^= 1;
        if (bytesRead === buf.length && read < budget && this.offset < st.size) reading = readInto(cur, this.offset);
        this.splitter.feed(buf.subarray(0, bytesRead));
        for (;;) {
          // Lines shipped as they are (not decoded) go in runs; one that is not (or a line begun in the last
          // chunk) alone.
          const run = this.splitter.nextRun(RUN_BYTES);
          if (run) {
            counters.linesIn += run.lines;
            const wait = emit({
              text: '',
              raw: run.raw,
              lines: run.lines,
              truncated: false,
              stream: this,
              offset: base + run.end,
              generation: this.generation,
              dataset: this.o.dataset,
            });
            if (wait) await wait;
            continue;
          }
          const l = this.splitter.next();
          if (!l) break;
          counters.linesIn++;
          if (l.truncated) counters.truncatedLines++;
          const wait = emit({
            text: l.text,
            raw: l.raw,
            truncated: l.truncated,
            stream: this,
            offset: base + l.end,
            generation: this.generation,
            dataset: this.o.dataset,
          });
          if (wait) await wait;
        }
      }
    } finally {
      // A read still going into the other chunk must land before that chunk is read into again.
      if (reading) await reading.catch(() => undefined);
    }
    if (read > 0) this.quietSince = Date.now();
    return read;
  }

  /** A draining file quiet for rotateWaitMs is finished: its last line, even without a newline, goes out. */
  async finishIfDrained(
    emit: (l: SourceLine) => Promise<void> | undefined,
    counters: SourceCounters,
  ): Promise<StepResult> {
    if (this.state !== 'draining' || Date.now() - this.quietSince < this.o.rotateWaitMs) return 'open';
    const last = this.splitter.finish();
    if (last) {
      counters.linesIn++;
      if (last.truncated) counters.truncatedLines++;
      await emit({
        text: last.text,
        raw: last.raw,
        truncated: last.truncated,
        stream: this,
        offset: this.offset,
        generation: this.generation,
        dataset: this.o.dataset,
      });
    }
    await this.fh.close();
    return 'done';
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }

  private startDraining(): void {
    if (this.state === 'draining') return;
    this.state = 'draining';
    this.quietSince = Date.now();
  }
}
