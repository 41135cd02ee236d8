/**
 * The syslog event's JSON made two ways: as bytes straight from the frame (what the agent ships when no
 * transform reads the events) and as text from the parsed fields. Over seeded random streams of lines
 * (RFC 5424 and 3164, headers repeated and changed, JSON messages, control characters, non-ASCII and
 * invalid UTF-8, cut messages), the bytes are the text's bytes whenever the byte path takes the line.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SyslogParser } from '../../../../src/agent/parsers/syslog.js';
import {
  PARSE_ERROR,
  senderSuffix,
  syslogEvent,
  SyslogEventWriter,
} from '../../../../src/agent/sources/syslog-event.js';
import { escapedBound, escapedLength, escapeJsonString } from '../../../../src/util/json-escape.js';
import { testSeed } from '../../../support/helpers.js';

const REPLAY = 'npx vitest run test/unit/agent/sources/syslog-event.test.ts';

function randomText(rnd: () => number, max: number): string {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const parts = [
    'a',
    'Z',
    ' ',
    '"',
    '\\',
    '\t',
    '\u0001',
    '\u001f',
    '\u007f',
    '{"k":"v"}',
    ':',
    '[',
    ']',
    '=',
    'é',
    '✓',
    '😀',
  ];
  return Array.from({ length: Math.floor(rnd() * max) }, () => pick(parts)).join('');
}

function randomLine(rnd: () => number): Buffer {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const pri = pick(['<13>', '<165>', '<0>', '', '<999>']);
  const header = pick([
    `${pri}Nov 23 19:05:01 web-1 app[42]: `,
    `${pri}Nov  3 19:05:01 web-1 app: `,
    `${pri}Nov 23 19:05:02 web-1 sshd[7]:`,
    `${pri}2026-11-23T19:05:01.123+01:00 host cron `,
    `${pri}Jan 01 00:00:00 hôst app[1]: `,
    `${pri}1 2026-11-23T19:05:01Z web-1 app 42 ID47 [ex@1 a="1" b="q\\"uote"] `,
    `${pri}1 2026-11-23T19:05:01Z - - - - - `,
    `${pri}1 - h a - - [x@1 k="v"]`,
    `${pri}1 2026-11-23T19:05:01Z h a p m - \uFEFF`,
    'not syslog at all ',
    '',
    `${pri}Nov 23 19:05:01 ${'h'.repeat(1500)} app: `,
  ]);
  const message = pick([
    () => JSON.stringify({ status: 200, uri: '/a"b', ua: 'Mozilla/5.0 (X11)' }),
    () => `${'"\u0001'.repeat(2500)}é`,
    () => randomText(rnd, 40),
    () => '',
  ])();
  const bytes = Buffer.from(header + message);
  // Now and then a byte that is no UTF-8, or a multi-byte character cut in half.
  if (bytes.length > 0 && rnd() < 0.08) bytes[Math.floor(rnd() * bytes.length)] = pick([0xff, 0xc3, 0x80]);
  return rnd() < 0.05 && bytes.length > 3 ? bytes.subarray(0, bytes.length - 1) : bytes;
}

describe('syslog events as bytes', () => {
  it('are the bytes of the text path for every line the byte path takes (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_SYSLOG_EVENT_SEED', REPLAY);
    const sender = senderSuffix('192.0.2.7', 51234);
    let taken = 0;
    let checked = 0;
    for (const rfc of ['auto', '3164', '5424'] as const) {
      const parser = new SyslogParser(rfc, undefined, 'UTC');
      const writer = new SyslogEventWriter(parser);
      for (let i = 0; i < 3000; i++) {
        const frame = randomLine(rnd);
        const truncated = rnd() < 0.1;
        const text = syslogEvent(parser, frame.toString('utf8'), truncated, sender);
        const bytes = writer.write(frame, truncated, Buffer.from(sender));
        checked++;
        if (!bytes) continue;
        taken++;
        expect(bytes.toString('utf8'), `${replay}: ${JSON.stringify(frame.toString('latin1'))} (${rfc})`).toBe(
          text.event,
        );
        expect(writer.parsed, replay).toBe(text.parsed);
        JSON.parse(bytes.toString('utf8'));
      }
    }
    // Most lines go the byte path: the comparison above is not vacuous.
    expect(taken / checked).toBeGreaterThan(0.6);
  });

  it('takes ASCII and valid UTF-8 lines, and leaves invalid UTF-8 and message-less events to the text path', () => {
    const parser = new SyslogParser('auto', undefined, 'UTC');
    const writer = new SyslogEventWriter(parser);
    const sender = Buffer.from(senderSuffix('::1', 9));
    const event = (line: string | Buffer) => writer.write(Buffer.from(line), false, sender)?.toString('utf8');
    expect(JSON.parse(event('<13>Nov 23 19:05:01 web-1 app[42]: {"a":"b\\\\c"}')!)).toMatchObject({
      appname: 'app',
      procid: '42',
      message: '{"a":"b\\\\c"}',
      'client.address': '::1',
    });
    expect(JSON.parse(event('<13>Nov 23 19:05:01 hôte app: déjà vu ✓')!)).toMatchObject({
      hostname: 'hôte',
      message: 'déjà vu ✓',
    });
    expect(JSON.parse(event('no header\there')!)).toEqual({
      message: 'no header\there',
      parse_error: PARSE_ERROR,
      'client.address': '::1',
      'client.port': 9,
    });
    expect(event(Buffer.from([0x3c, 0x31, 0x33, 0x3e, 0xff]))).toBeUndefined();
    expect(event('<13>1 2026-11-23T19:05:01Z h a p m -')).toBeUndefined();
  });

  it('reuses a header only while the header is the same', () => {
    const parser = new SyslogParser('3164', undefined, 'UTC');
    const writer = new SyslogEventWriter(parser);
    const sender = Buffer.from(senderSuffix('127.0.0.1', 1));
    const fields = (line: string) =>
      JSON.parse(writer.write(Buffer.from(line), false, sender)!.toString('utf8')) as Record<string, unknown>;
    expect(fields('<13>Nov 23 19:05:01 a x[1]: one')).toMatchObject({ hostname: 'a', procid: '1', message: 'one' });
    expect(fields('<13>Nov 23 19:05:01 a x[1]: two')).toMatchObject({ hostname: 'a', procid: '1', message: 'two' });
    // One byte more of header: the pid; a space less: the message keeps it.
    expect(fields('<13>Nov 23 19:05:01 a x[12]: one')).toMatchObject({ procid: '12', message: 'one' });
    expect(fields('<13>Nov 23 19:05:01 a x[12]:one')).toMatchObject({ procid: '12', message: 'one' });
    expect(fields('<14>Nov 23 19:05:02 b y: three')).toMatchObject({ severity: 'info', hostname: 'b', appname: 'y' });
    expect(fields('<14>Nov 23 19:05:02 b y: three')).not.toHaveProperty('procid');
  });
});

describe('syslog events as bytes, over time', () => {
  afterEach(() => vi.useRealTimers());

  it("keep a header's year no longer than the parser keeps its stamp's instant", () => {
    // A sender a day ahead: at first its stamp is more than a day ahead (last year's), a minute later not.
    vi.useFakeTimers({ toFake: ['Date'] });
    const t0 = Date.parse('2026-11-23T12:00:00Z');
    vi.setSystemTime(t0);
    const parser = new SyslogParser('3164', () => new Date(Date.now()), 'UTC');
    const line = '<13>Nov 24 12:00:30 host app: x';
    const sender = senderSuffix('127.0.0.1', 1);
    const bytes = (w: SyslogEventWriter) =>
      (JSON.parse(w.write(Buffer.from(line), false, Buffer.from(sender))!.toString()) as { _time: string })._time;
    expect(bytes(new SyslogEventWriter(parser))).toBe('2025-11-24T12:00:30.000Z');
    // Another connection's first line, 59 s on, gets the parser's instant of the stamp (worked out at t0).
    vi.setSystemTime(t0 + 59_000);
    const late = new SyslogEventWriter(parser);
    expect(bytes(late)).toBe('2025-11-24T12:00:30.000Z');
    // 100 s on, both paths work the year out again: the stamp is now less than a day ahead.
    vi.setSystemTime(t0 + 100_000);
    expect(bytes(late)).toBe('2026-11-24T12:00:30.000Z');
    expect(JSON.parse(syslogEvent(parser, line, false, sender).event)).toMatchObject({
      _time: '2026-11-24T12:00:30.000Z',
    });
  });
});

describe('JSON escaping of UTF-8 bytes', () => {
  it('writes what JSON.stringify writes (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_JSON_ESCAPE_SEED', REPLAY);
    const out = Buffer.alloc(escapedBound(4096));
    for (let i = 0; i < 5000; i++) {
      // Every code point below 0x80, and some beyond, in runs and alone.
      const text = Array.from({ length: Math.floor(rnd() * 60) }, () =>
        rnd() < 0.8 ? String.fromCharCode(Math.floor(rnd() * 0x80)) : ['é', '€', '😀', '\u2028', '\u00a0'][i % 5]!,
      ).join('');
      const src = Buffer.from(`xx${text}yy`);
      const end = escapeJsonString(src, 2, src.length - 2, out, 3);
      expect(out.toString('utf8', 3, end), replay).toBe(JSON.stringify(text).slice(1, -1));
      expect(escapedLength(src, 2, src.length - 2), replay).toBe(end - 3);
    }
  });
});
