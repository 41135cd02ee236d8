/**
 * Joins the lines of one event written over several lines (stack traces) before parsing: either a line
 * matching `start` begins a new event and the others join it, or a line matching `continuation` joins
 * the previous one and the others begin new events. A pending event is emitted after `timeoutMs` without
 * a new line, so the last trace of a quiet file is not held back. An event longer than `maxLines` or
 * `maxBytes` is emitted as it is and the rest starts over (nothing is dropped).
 */
import type { Emit, Envelope, Transform } from './transform.js';

export interface MultilineConfig {
  start?: string;
  continuation?: string;
  preset?: keyof typeof PRESETS;
  timeoutMs?: number;
  maxLines?: number;
  maxBytes?: number;
}

/** Continuation patterns for common stack traces. */
export const PRESETS = {
  // "\tat com.x.Y.z(Y.java:10)", "\t... 12 more", "Caused by: …", "\tSuppressed: …"
  java: '^(?:\\s+at |\\s+\\.\\.\\. \\d+ (?:more|common frames omitted)|Caused by: |\\s+Suppressed: )',
  // indented frames and the final "SomeError: message" line of a traceback
  python: '^(?:\\s+|[A-Za-z_][\\w.]*(?:Error|Exception|Warning|Exit|Interrupt)(?::|$)|During handling of the above exception|The above exception was the direct cause)',
  // goroutine dumps after "panic:": indented frames, "goroutine N [state]:", "created by", blank lines
  go: '^(?:\\s+|goroutine \\d+ \\[|created by |$|[\\w./*()-]+\\(.*\\)$|\\[signal )',
} as const;

/** `M`: what travels with each line (its source position); an event carries that of its last line. */
export class Multiline<M = undefined> {
  private readonly start?: RegExp;
  private readonly continuation?: RegExp;
  private readonly timeoutMs: number;
  private readonly maxLines: number;
  private readonly maxBytes: number;
  private lines: string[] = [];
  private lastMeta: M | undefined;
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(cfg: MultilineConfig, private readonly emit: (text: string, meta: M) => Promise<void>) {
    const cont = cfg.continuation ?? (cfg.preset ? PRESETS[cfg.preset] : undefined);
    if (!cfg.start && !cont) throw new Error('multiline needs a start or continuation pattern, or a preset (java, python, go)');
    try {
      if (cfg.start) this.start = new RegExp(cfg.start.replace(/\(\?P</g, '(?<'));
      else this.continuation = new RegExp(cont!.replace(/\(\?P</g, '(?<'));
    } catch (e) {
      throw new Error(`invalid multiline pattern: ${(e as Error).message}`);
    }
    this.timeoutMs = cfg.timeoutMs ?? 1000;
    this.maxLines = cfg.maxLines ?? 500;
    this.maxBytes = cfg.maxBytes ?? 1024 * 1024;
  }

  /** Adds a line; resolves once any event it completes has been emitted. */
  async push(line: string, meta?: M): Promise<void> {
    await this.chain;
    const joins = this.lines.length > 0 && (this.start ? !this.start.test(line) : this.continuation!.test(line));
    if (!joins || this.lines.length >= this.maxLines || this.bytes + line.length > this.maxBytes) await this.emitPending();
    this.lines.push(line);
    this.lastMeta = meta;
    this.bytes += line.length + 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void (this.chain = this.chain.then(() => this.emitPending())), this.timeoutMs);
  }

  /** Emits the pending event now (end of input, shutdown). */
  async flush(): Promise<void> {
    await this.chain;
    await this.emitPending();
  }

  private async emitPending(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0) return;
    const text = this.lines.join('\n');
    this.lines = [];
    this.bytes = 0;
    await this.emit(text, this.lastMeta as M);
  }
}

/** The `multiline` transform: a Multiline joiner per stream, so lines of different files never mix. */
export class MultilineTransform implements Transform {
  private readonly joiners = new Map<string, Multiline<Envelope>>();

  constructor(readonly name: string, private readonly cfg: MultilineConfig, private readonly next: Emit) {}

  async process(e: Envelope): Promise<void> {
    let m = this.joiners.get(e.stream.id);
    if (!m) {
      m = new Multiline<Envelope>(this.cfg, async (text, last) => this.next({ ...last, text, event: undefined, verbatim: undefined, extra: undefined }));
      this.joiners.set(e.stream.id, m);
    }
    // A cut line is not matched against patterns: it closes what is pending and goes on alone.
    if (e.truncated) {
      await m.flush();
      await this.next(e);
    } else await m.push(e.text, e);
  }

  async flush(): Promise<void> {
    for (const m of this.joiners.values()) await m.flush();
  }
}
