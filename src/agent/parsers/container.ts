import { MAX_JOINED_BYTES, type LogEvent, type Parser, type ParserSpec } from './parser.js';

/**
 * Container runtime log formats, joining the partial lines a runtime splits long lines into:
 * - docker json-file: `{"log":"…\n","stream":"stdout","time":"…"}`; a `log` without its final newline is
 *   a part, continued by the next entry of the same stream.
 * - CRI (containerd, CRI-O): `2024-01-01T00:00:00.123456789Z stdout P text`; `P` is a part, `F` the end.
 * Events: {_time, stream, message}. A joined line over MAX_JOINED_BYTES is cut and marked `truncated`.
 * A line in neither format is kept as `{message}`.
 */
export class ContainerParser implements Parser {
  private readonly partial = new Map<string, { time: string; text: string; truncated: boolean }>();

  constructor(private readonly format: 'docker' | 'cri') {}

  parse(line: string): LogEvent | undefined {
    return this.format === 'docker' ? this.docker(line) : this.cri(line);
  }

  holding(): boolean {
    return this.partial.size > 0;
  }

  private docker(line: string): LogEvent | undefined {
    let v: { log?: unknown; stream?: unknown; time?: unknown };
    try {
      v = JSON.parse(line) as typeof v;
    } catch {
      return { message: line };
    }
    if (typeof v?.log !== 'string') return { message: line };
    const stream = typeof v.stream === 'string' ? v.stream : 'stdout';
    const complete = v.log.endsWith('\n');
    return this.join(stream, typeof v.time === 'string' ? v.time : '', complete ? v.log.slice(0, -1) : v.log, complete);
  }

  private cri(line: string): LogEvent | undefined {
    const m = /^(\S+) (stdout|stderr) ([PF])(?:[^ ]*)? (.*)$/s.exec(line);
    if (!m) return { message: line };
    return this.join(m[2]!, m[1]!, m[4]!, m[3] === 'F');
  }

  private join(stream: string, time: string, text: string, complete: boolean): LogEvent | undefined {
    const open = this.partial.get(stream);
    const part = open ?? { time, text: '', truncated: false };
    if (!part.truncated) {
      const room = MAX_JOINED_BYTES - part.text.length;
      if (text.length > room) {
        part.text += text.slice(0, room);
        part.truncated = true;
      } else part.text += text;
    }
    if (!complete) {
      this.partial.set(stream, part);
      return undefined;
    }
    this.partial.delete(stream);
    const out: LogEvent = { stream, message: part.text };
    if (part.time) out._time = part.time;
    if (part.truncated) out.truncated = true;
    return out;
  }
}

export const dockerParser: ParserSpec = {
  type: 'docker',
  summary: "docker's json-file lines, partial lines joined",
  options: {},
  configure: () => undefined,
  create: () => new ContainerParser('docker'),
};

export const criParser: ParserSpec = {
  type: 'cri',
  summary: 'CRI (containerd, CRI-O) lines, partial lines joined',
  options: {},
  configure: () => undefined,
  create: () => new ContainerParser('cri'),
};
