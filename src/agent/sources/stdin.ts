/**
 * The `stdin` source: the lines of the agent's standard input (`app | ferry agent -c pipe.yaml`). Standard
 * input cannot be read again, so there is nothing to checkpoint: at-least-once holds from the moment a
 * line is in the disk queue.
 */
import type { Readable } from 'node:stream';
import { forEachLine } from './lines.js';
import {
  MAX_LINE_BYTES_OPTION,
  newSourceCounters,
  type Source,
  type SourceCounters,
  type SourceLine,
  type SourceSpec,
  type Stream,
} from './source.js';

export class StdinSource implements Source {
  readonly counters: SourceCounters;
  private done: Promise<void> | undefined;
  private stopping = false;
  private readonly stream: Stream;

  constructor(
    readonly name: string,
    private readonly maxLineBytes: number,
    private readonly input: Readable = process.stdin,
    counters?: SourceCounters,
    private readonly onStart: () => void = () => undefined,
  ) {
    this.counters = counters ?? newSourceCounters();
    this.stream = { id: `${name}:stdin`, source: name, acknowledge: () => undefined };
  }

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    let offset = 0;
    this.done = forEachLine(this.input, this.maxLineBytes, async (text, truncated) => {
      if (this.stopping) return;
      this.counters.linesIn++;
      this.counters.bytesIn += Buffer.byteLength(text) + 1;
      if (truncated) this.counters.truncatedLines++;
      offset++;
      await emit({ text, truncated, stream: this.stream, offset, generation: 0 });
    }).then(() => undefined);
    this.onStart();
  }

  async finished(): Promise<void> {
    await this.done;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.input.pause();
  }

  async close(): Promise<void> {}
}

const STDIN_OPTIONS = { max_line_bytes: MAX_LINE_BYTES_OPTION };

export const stdinSource: SourceSpec<{ maxLineBytes: number }, typeof STDIN_OPTIONS> = {
  type: 'stdin',
  summary:
    'the lines of standard input (`app | ferry agent -c config/stdin.yaml`); the agent exits once they are delivered',
  options: STDIN_OPTIONS,
  single: true,
  configure: (v) => ({ maxLineBytes: v.max_line_bytes }),
  create: (s, ctx) =>
    new StdinSource(ctx.name, s.maxLineBytes, undefined, ctx.counters(newSourceCounters), () =>
      ctx.log.info({ source: ctx.name }, 'source started: reading standard input'),
    ),
};
