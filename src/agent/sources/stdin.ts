/**
 * The `stdin` source: the lines of the agent's standard input (`app | ferry agent -c pipe.yaml`). Standard
 * input cannot be read again, so there is nothing to checkpoint: at-least-once holds from the moment a
 * line is in the disk queue.
 */
import type { Readable } from 'node:stream';
import { forEachLine } from './lines.js';
import { newSourceCounters, type Source, type SourceCounters, type SourceLine, type Stream } from './source.js';

export class StdinSource implements Source {
  readonly counters: SourceCounters;
  private done: Promise<void> | undefined;
  private stopping = false;
  private readonly stream: Stream;

  constructor(readonly name: string, private readonly maxLineBytes: number, private readonly input: Readable = process.stdin, counters?: SourceCounters) {
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
