/**
 * The daemon's log: pino, to stderr (stdout is the console sink's and the commands' output), in one of two
 * forms. `json` (one object a line, levels as words, ISO 8601 times) is what systemd's journal, Docker and
 * log shippers collect; `text` (`2026-11-26T00:20:01.123Z INFO  file opened path=/var/log/app.log
 * offset=0`) is for a person at a terminal. The default is text when stderr is a terminal, JSON otherwise.
 */
import { type DestinationStream, type Logger, pino } from 'pino';

export type LogFormat = 'text' | 'json';

const LEVEL_WIDTH = 5;

/** A value in a text line: bare when it is a plain word, JSON-quoted when it holds spaces or quotes. */
function textValue(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=\\\x00-\x1f\x7f]+$/.test(v) ? v : JSON.stringify(v);
  if (v !== null && typeof v === 'object') {
    // An error is its message: the stack is for the JSON form and for bugs, not for a user's mistake.
    const e = v as { message?: unknown; type?: unknown; stack?: unknown };
    if (typeof e.message === 'string' && typeof e.stack === 'string') return textValue(e.message);
    return JSON.stringify(v);
  }
  return String(v);
}

/** One pino JSON record as a text line. */
export function textLine(record: string): string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(record) as Record<string, unknown>;
  } catch {
    return record;
  }
  const { time, level, msg, pid: _pid, ...fields } = r;
  const head = `${String(time)} ${String(level).toUpperCase().padEnd(LEVEL_WIDTH)} ${String(msg ?? '')}`;
  const tail = Object.entries(fields)
    .map(([k, v]) => `${k}=${textValue(v)}`)
    .join(' ');
  return `${tail ? `${head} ${tail}` : head}\n`;
}

/**
 * Writes each record as a text line through the same synchronous writer as the JSON form (a crash loses no
 * line; a pipe that is full for a moment is waited for rather than an EAGAIN thrown at the caller).
 */
function textDestination(fd: number): DestinationStream {
  const out = pino.destination({ dest: fd, sync: true });
  return { write: (s: string) => void out.write(textLine(s)) };
}

export function defaultLogFormat(stream: { isTTY?: boolean } = process.stderr): LogFormat {
  return stream.isTTY ? 'text' : 'json';
}

export function createLogger(level: string, format: LogFormat = defaultLogFormat(), fd = 2): Logger {
  const options = {
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return pino(options, format === 'text' ? textDestination(fd) : pino.destination({ dest: fd, sync: true }));
}
