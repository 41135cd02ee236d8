/**
 * The daemon's log lines as a person reads them (text) and as a collector does (JSON), and the signal
 * count that takes the terminal's Ctrl-C and npm's forwarded copy of it as one request.
 */
import { describe, expect, it } from 'vitest';
import { defaultLogFormat, textLine } from '../../../src/cli/logger.js';
import { SignalCount, REPEAT_GRACE_MS } from '../../../src/cli/signals.js';

describe('log lines', () => {
  it('writes a record as time, level as a word, message and key=value fields, quoting what needs it', () => {
    const record = JSON.stringify({
      level: 'info',
      time: '2026-11-26T00:20:01.123Z',
      pid: 42,
      source: 'app',
      msg: 'file opened',
      path: '/var/log/my app.log',
      offset: 0,
      sizes: { a: 1 },
    });
    expect(textLine(record)).toBe(
      '2026-11-26T00:20:01.123Z INFO  file opened source=app path="/var/log/my app.log" offset=0 sizes={"a":1}\n',
    );
  });

  it('gives an error as its message, never its stack, and keeps a control character from reaching the terminal', () => {
    const record = JSON.stringify({
      level: 'error',
      time: 'T',
      msg: 'cannot read',
      err: { type: 'Error', message: 'EACCES: permission denied', stack: 'Error: EACCES\n    at x (y.js:1:1)' },
      name: 'a\u001b[2Jb',
    });
    expect(textLine(record)).toBe('T ERROR cannot read err="EACCES: permission denied" name="a\\u001b[2Jb"\n');
  });

  it('is text on a terminal and JSON otherwise', () => {
    expect(defaultLogFormat({ isTTY: true })).toBe('text');
    expect(defaultLogFormat({ isTTY: false })).toBe('json');
    expect(defaultLogFormat({})).toBe('json');
  });
});

describe('stop signals', () => {
  it("counts the terminal's Ctrl-C and npm's forwarded copy as one request, a later one or a SIGTERM as a second", () => {
    let now = 1000;
    const s = new SignalCount(() => now);
    expect(s.counts('SIGINT')).toBe(true);
    now += 5;
    expect(s.counts('SIGINT')).toBe(false);
    expect(s.count).toBe(1);
    now += REPEAT_GRACE_MS;
    expect(s.counts('SIGINT')).toBe(true);
    expect(s.count).toBe(2);
    const t = new SignalCount(() => now);
    expect(t.counts('SIGTERM')).toBe(true);
    expect(t.counts('SIGTERM')).toBe(true);
    expect(t.count).toBe(2);
  });
});
