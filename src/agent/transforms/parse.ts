/** The `parse` transform: turns each line into an event with the configured parser, one per stream. */
import { createParser, type Parser, type ParserConfig } from '../parsers/index.js';
import type { Emit, Envelope, Transform } from './transform.js';

export class ParseTransform implements Transform {
  // Container parsers join partial lines, so each stream (file) needs its own parser state.
  private readonly parsers = new Map<string, Parser>();

  constructor(readonly name: string, private readonly cfg: ParserConfig, private readonly next: Emit) {}

  async process(e: Envelope): Promise<void> {
    let parser = this.parsers.get(e.stream.id);
    if (!parser) this.parsers.set(e.stream.id, (parser = createParser(this.cfg)));
    const event = parser.parse(e.text);
    if (event === undefined) return; // a partial line, held until its end arrives
    if (e.truncated) event.truncated = true;
    e.event = event;
    e.extra = undefined;
    // A JSON line parsed as it is: keep its text, so the sink need not serialise it again.
    e.verbatim = this.cfg.type === 'json' && !e.truncated && event.message !== e.text && isObjectText(e.text) ? e.text : undefined;
    await this.next(e);
  }

  async flush(): Promise<void> {
    // Nothing to emit: a partial container line without its end is read again after a restart.
  }
}

/** `{…}` with at least one member: the shape a field can be spliced into before the closing brace. */
function isObjectText(text: string): boolean {
  return text.charCodeAt(0) === 0x7b && text.charCodeAt(text.length - 1) === 0x7d && !/^\{\s*\}$/.test(text);
}
