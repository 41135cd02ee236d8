/**
 * The `console` sink: writes events to the agent's stdout (or stderr), to watch what flows while writing a
 * config: NDJSON as shipped (`json`), or one readable line per event (`text`: time, level, message, then
 * the other fields as key=value). A batch counts as delivered once it is written; a closed stream (the
 * reader of a pipe went away) stops the sink, said once, rather than retrying for ever.
 */
import type { Writable } from 'node:stream';
import { oneOf, type OptionSpecs } from '../../config/options.js';
import { decompress } from '../../util/codec.js';
import {
  PermanentSinkError,
  type Destination,
  type Encoding,
  type SendOutcome,
  type Sink,
  type SinkSpec,
} from './sink.js';

type Format = 'json' | 'text';

interface ConsoleSettings {
  format: Format;
  target: 'stdout' | 'stderr';
}

/** The fields a readable line leads with, in order, and the names each may go by. */
const NEWLINE = Buffer.from('\n');

const TIME_FIELDS = ['_time', '@timestamp', 'timestamp', 'time'];
const LEVEL_FIELDS = ['level', 'severity', 'severity_text', 'log.level'];
const MESSAGE_FIELDS = ['message', 'msg', 'body'];

/** The error each stream has had (EPIPE: its reader went away), watched once per stream, not once per sink. */
const broken = new WeakMap<Writable, Error | undefined>();

function watch(out: Writable): void {
  if (broken.has(out)) return;
  broken.set(out, undefined);
  // An error on the stream must not end the process: the sinks' next sends say it.
  out.on('error', (err: Error) => broken.set(out, broken.get(out) ?? err));
}

export class ConsoleSink implements Sink {
  readonly encoding = 'none';

  constructor(
    private readonly out: Writable,
    private readonly format: Format,
  ) {
    watch(out);
  }

  async send(batch: Buffer, encoding: Encoding, to?: Destination): Promise<SendOutcome> {
    const err = broken.get(this.out);
    if (err) throw new PermanentSinkError(`cannot write to the console: ${err.message}`);
    const ndjson = decompress(batch, encoding);
    // A batch's lines are separated, not ended, by newlines.
    const data =
      this.format === 'json'
        ? Buffer.concat([ndjson, NEWLINE])
        : Buffer.from(readableLines(ndjson.toString('utf8'), to?.dataset));
    await new Promise<void>((resolve, reject) => {
      this.out.write(data, (err) =>
        err ? reject(new PermanentSinkError(`cannot write to the console: ${err.message}`)) : resolve(),
      );
    });
    return { kind: 'delivered' };
  }

  async close(): Promise<void> {}
}

/** Each NDJSON line as one readable line: `time level [dataset] message key=value…`. */
export function readableLines(ndjson: string, dataset?: string): string {
  let out = '';
  for (const line of ndjson.split('\n')) {
    if (!line) continue;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      out += `${line}\n`;
      continue;
    }
    const parts: string[] = [];
    const rest = { ...event };
    const lead = (names: string[]) => {
      for (const n of names)
        if (Object.hasOwn(rest, n) && rest[n] !== null && typeof rest[n] !== 'object') {
          const v = String(rest[n]);
          delete rest[n];
          return v;
        }
      return undefined;
    };
    const time = lead(TIME_FIELDS);
    const level = lead(LEVEL_FIELDS);
    if (time !== undefined) parts.push(oneLine(time));
    if (level !== undefined) parts.push(oneLine(level.toUpperCase()));
    if (dataset !== undefined) parts.push(`[${dataset}]`);
    const message = lead(MESSAGE_FIELDS);
    if (message !== undefined) parts.push(oneLine(message));
    for (const [k, v] of Object.entries(rest)) parts.push(`${oneLine(k)}=${valueText(v)}`);
    out += `${parts.join(' ')}\n`;
  }
  return out;
}

/**
 * Text on one line with no control characters: line breaks and tabs as `\n` `\r` `\t`, the others (the
 * terminal's escape sequences) as `\u001b`, so an event can neither forge lines nor drive the terminal.
 */
function oneLine(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) =>
    c === '\n'
      ? '\\n'
      : c === '\r'
        ? '\\r'
        : c === '\t'
          ? '\\t'
          : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** A field's value after `key=`: plain when it reads unambiguously, else JSON (quoted, its controls escaped). */
function valueText(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=\\\u0000-\u001f\u007f-\u009f]+$/.test(v) ? v : oneLine(JSON.stringify(v));
  return oneLine(JSON.stringify(v) ?? 'null');
}

const CONSOLE_OPTIONS = {
  format: oneOf(['json', 'text'], 'json').doc(
    '`json`: the NDJSON lines as shipped; `text`: one readable line per event (time, level, message, then the other fields as `key=value`)',
  ),
  target: oneOf(['stdout', 'stderr'], 'stdout').doc(
    "where to write; the agent's own log also goes to stdout, so `stderr` keeps the two apart",
  ),
} satisfies OptionSpecs;

export const consoleSink: SinkSpec<ConsoleSettings, typeof CONSOLE_OPTIONS> = {
  type: 'console',
  summary: "the agent's stdout or stderr, as NDJSON or readable lines (to watch what flows)",
  options: CONSOLE_OPTIONS,
  datasetOptional: true,
  configure: (v) => ({ format: v.format, target: v.target }),
  describe: (s) => ({ target: s.target, format: s.format }),
  create: (s) => new ConsoleSink(s.target === 'stdout' ? process.stdout : process.stderr, s.format),
};
