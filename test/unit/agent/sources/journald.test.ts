/** The journald source's pure parts: a line of `journalctl --output=json` as an event, and journalctl's arguments. */
import { describe, expect, it } from 'vitest';
import { journalctlArgs, journalEvent } from '../../../../src/agent/sources/journald.js';

describe('a journal entry as an event', () => {
  it('keeps the fields, turns bytes into text, and the realtime stamp into _time with its microseconds', () => {
    const e = journalEvent(
      JSON.stringify({
        __CURSOR: 's=1;i=2',
        __REALTIME_TIMESTAMP: '1795685473552832',
        MESSAGE: [104, 105, 10, 226, 156, 147],
        TAG: ['a', [98, 10]],
        _PID: '42',
      }),
    );
    expect(e?.cursor).toBe('s=1;i=2');
    expect(JSON.parse(e!.event)).toEqual({
      _time: '2026-11-26T09:31:13.552832Z',
      MESSAGE: 'hi\n✓',
      TAG: ['a', 'b\n'],
      _PID: '42',
    });
  });

  it('rewrites an entry without bytes as text, wherever journalctl put its cursor and stamp', () => {
    const fields = {
      MESSAGE: 'say "__CURSOR":"x" [1]',
      __CURSOR: 's=1;i=2',
      _PID: '42',
      __REALTIME_TIMESTAMP: '1795685473552832',
    };
    const orders = [
      ['MESSAGE', '__CURSOR', '_PID', '__REALTIME_TIMESTAMP'],
      ['__CURSOR', '__REALTIME_TIMESTAMP', 'MESSAGE', '_PID'],
      ['__REALTIME_TIMESTAMP', 'MESSAGE', '_PID', '__CURSOR'],
    ];
    for (const order of orders) {
      const line = JSON.stringify(Object.fromEntries(order.map((k) => [k, fields[k as keyof typeof fields]])));
      const e = journalEvent(line)!;
      expect(e.cursor, line).toBe('s=1;i=2');
      expect(e.event.startsWith('{"_time":"2026-11-26T09:31:13.552832Z",'), e.event).toBe(true);
      expect(JSON.parse(e.event), line).toEqual({
        _time: '2026-11-26T09:31:13.552832Z',
        MESSAGE: 'say "__CURSOR":"x" [1]',
        _PID: '42',
      });
    }
    expect(JSON.parse(journalEvent('{"__CURSOR":"c","__REALTIME_TIMESTAMP":"1"}')!.event)).toEqual({
      _time: '1970-01-01T00:00:00.000001Z',
    });
  });

  it('answers nothing for a line that is no entry, and no _time for a stamp that is not one', () => {
    expect(journalEvent('not json')).toBeUndefined();
    expect(journalEvent('[1,2]')).toBeUndefined();
    expect(JSON.parse(journalEvent('{"__REALTIME_TIMESTAMP":"soon","MESSAGE":"x"}')!.event)).toEqual({ MESSAGE: 'x' });
  });

  it('asks journalctl for the new entries only at the end, and for all of them from the beginning', () => {
    const s = {
      units: [],
      identifiers: [],
      matches: [],
      startAt: 'end' as const,
      journalctl: 'journalctl',
      maxLineBytes: 1,
      checkpointIntervalMs: 1,
    };
    expect(journalctlArgs(s, 'end')).toEqual([
      '--output=json',
      '--all',
      '--follow',
      '--no-pager',
      '--quiet',
      '--lines=0',
    ]);
    expect(journalctlArgs(s, 'beginning')).toEqual([
      '--output=json',
      '--all',
      '--follow',
      '--no-pager',
      '--quiet',
      '--no-tail',
    ]);
  });
});
