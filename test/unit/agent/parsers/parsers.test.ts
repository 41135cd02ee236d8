import { describe, expect, it } from 'vitest';
import { createParser } from '../../../../src/agent/parsers/index.js';
import { MAX_JOINED_BYTES } from '../../../../src/agent/parsers/parser.js';
import { SyslogParser } from '../../../../src/agent/parsers/syslog.js';

describe('agent parsers', () => {
  it('json keeps objects and wraps anything else as {message}', () => {
    const p = createParser({ type: 'json' });
    expect(p.parse('{"level":"info","n":1,"a":{"b":true}}')).toEqual({ level: 'info', n: 1, a: { b: true } });
    expect(p.parse('not json')).toEqual({ message: 'not json' });
    expect(p.parse('{"broken":')).toEqual({ message: '{"broken":' });
    expect(p.parse('[1,2]')).toEqual({ message: '[1,2]' });
    expect(p.parse('"a string"')).toEqual({ message: '"a string"' });
  });

  it('logfmt reads bare, quoted and escaped values', () => {
    const p = createParser({ type: 'logfmt' });
    expect(p.parse('level=info msg="hello \\"world\\"" took=12ms debug')).toEqual({
      level: 'info',
      msg: 'hello "world"',
      took: '12ms',
      debug: true,
    });
    expect(p.parse('a= b=""')).toEqual({ a: '', b: '' });
    expect(p.parse('')).toEqual({ message: '' });
    expect(p.parse('"=" = "')).toEqual({ message: '"=" = "' }); // junk: kept whole, and the scan ends
  });

  it('regex takes named groups (RE2 (?P<…>) too) and keeps non-matching lines', () => {
    const p = createParser({
      type: 'regex',
      pattern: '^(?P<ip>\\S+) - (?<method>[A-Z]+) (?<path>\\S+)(?: (?<code>\\d+))?',
    });
    expect(p.parse('10.0.0.1 - GET /x 200')).toEqual({ ip: '10.0.0.1', method: 'GET', path: '/x', code: '200' });
    expect(p.parse('10.0.0.1 - GET /x')).toEqual({ ip: '10.0.0.1', method: 'GET', path: '/x' });
    expect(p.parse('garbage')).toEqual({ message: 'garbage' });
    expect(() => createParser({ type: 'regex', pattern: '(\\d+' })).toThrow(/invalid regex parser pattern/);
    expect(() => createParser({ type: 'regex', pattern: '\\d+' })).toThrow(/needs named groups/);
  });

  it('syslog RFC 5424 with structured data', () => {
    const p = createParser({ type: 'syslog' });
    expect(
      p.parse(
        '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="App\\"lication"] An application event',
      ),
    ).toEqual({
      facility: 'local4',
      severity: 'notice',
      _time: '2003-10-11T22:14:15.003Z',
      hostname: 'mymachine.example.com',
      appname: 'evntslog',
      msgid: 'ID47',
      'sd.exampleSDID@32473.iut': '3',
      'sd.exampleSDID@32473.eventSource': 'App"lication',
      message: 'An application event',
    });
    expect(p.parse('<34>1 2003-10-11T22:14:15.003Z host su - - -')).toEqual({
      facility: 'auth',
      severity: 'crit',
      _time: '2003-10-11T22:14:15.003Z',
      hostname: 'host',
      appname: 'su',
    });
  });

  it('syslog RFC 3164 infers the year', () => {
    const p = new SyslogParser('auto', () => new Date('2024-01-02T00:00:00Z'), 'UTC');
    expect(p.parse('<13>Jan  1 12:00:01 web1 sshd[4242]: Accepted publickey for root')).toEqual({
      facility: 'user',
      severity: 'notice',
      _time: '2024-01-01T12:00:01.000Z',
      hostname: 'web1',
      appname: 'sshd',
      procid: '4242',
      message: 'Accepted publickey for root',
    });
    // December seen in early January is last year's.
    expect(p.parse('<13>Dec 31 23:59:59 web1 cron: job')._time).toBe('2023-12-31T23:59:59.000Z');
    expect(p.parse('plain text')).toEqual({ message: 'plain text' });
    // January seen seconds before New Year (a sender's clock a little ahead) is next year's.
    const eve = new SyslogParser('auto', () => new Date('2026-12-31T23:59:55Z'), 'UTC');
    expect(eve.parse('<13>Jan 01 00:00:05 web1 cron: job')._time).toBe('2027-01-01T00:00:05.000Z');
    expect(eve.parse('<13>Dec 31 23:59:50 web1 cron: job')._time).toBe('2026-12-31T23:59:50.000Z');
  });

  it('syslog files as rsyslog and syslog-ng write them (no PRI): time in the configured zone, year across New Year, host, app, pid, message', () => {
    const paris = new SyslogParser('auto', () => new Date('2026-11-23T19:30:00Z'), 'Europe/Paris');
    expect(
      paris.parse('Nov 23 19:05:01 myhost sshd[123]: Accepted publickey for deploy from 10.0.0.1 port 50022 ssh2'),
    ).toEqual({
      _time: '2026-11-23T18:05:01.000Z',
      hostname: 'myhost',
      appname: 'sshd',
      procid: '123',
      message: 'Accepted publickey for deploy from 10.0.0.1 port 50022 ssh2',
    });
    // Summer time: Paris is UTC+2 in July.
    expect(paris.parse('Jul  4 09:00:00 myhost CRON[77]: (root) CMD (run-parts /etc/cron.hourly)')._time).toBe(
      '2026-07-04T07:00:00.000Z',
    );
    expect(paris.parse('Nov 23 19:05:02 myhost kernel: [  12.345678] eth0: link up')).toEqual({
      _time: '2026-11-23T18:05:02.000Z',
      hostname: 'myhost',
      appname: 'kernel',
      message: '[  12.345678] eth0: link up',
    });
    // Read on New Year's morning in Tokyo, a stamp of Dec 31 is last year's; one of Jan 1 is this year's.
    const tokyo = new SyslogParser('auto', () => new Date('2026-12-31T15:30:00Z'), 'Asia/Tokyo'); // 00:30 on Jan 1 2027 there
    expect(tokyo.parse('Dec 31 23:59:59 h app: last of the year')._time).toBe('2026-12-31T14:59:59.000Z');
    expect(tokyo.parse('Jan  1 00:10:00 h app: first of the year')._time).toBe('2026-12-31T15:10:00.000Z');
    // rsyslog's high-precision file format keeps its own stamp.
    expect(paris.parse('2026-11-23T19:05:01.123456+01:00 myhost systemd[1]: Started Session 4.')).toEqual({
      _time: '2026-11-23T19:05:01.123456+01:00',
      hostname: 'myhost',
      appname: 'systemd',
      procid: '1',
      message: 'Started Session 4.',
    });
    expect(
      createParser({ type: 'syslog', rfc: '3164', timezone: 'UTC' }).parse('Nov 23 19:05:01 h su: x')?._time,
    ).toMatch(/-11-23T19:05:01\.000Z$/);
    expect(paris.parse('not syslog at all')).toEqual({ message: 'not syslog at all' });
  });

  it('docker json-file joins partial lines per stream', () => {
    const p = createParser({ type: 'docker' });
    expect(p.parse('{"log":"part one ","stream":"stdout","time":"2024-01-01T00:00:00.1Z"}')).toBeUndefined();
    expect(p.parse('{"log":"error!\\n","stream":"stderr","time":"2024-01-01T00:00:00.2Z"}')).toEqual({
      stream: 'stderr',
      message: 'error!',
      _time: '2024-01-01T00:00:00.2Z',
    });
    expect(p.parse('{"log":"and two\\n","stream":"stdout","time":"2024-01-01T00:00:00.3Z"}')).toEqual({
      stream: 'stdout',
      message: 'part one and two',
      _time: '2024-01-01T00:00:00.1Z',
    });
    expect(p.parse('not docker')).toEqual({ message: 'not docker' });
  });

  it('CRI joins P parts up to the F line, and cuts an endless line', () => {
    const p = createParser({ type: 'cri' });
    expect(p.parse('2024-01-01T00:00:00.000000001Z stdout P hello ')).toBeUndefined();
    expect(p.parse('2024-01-01T00:00:00.000000002Z stdout F world')).toEqual({
      stream: 'stdout',
      message: 'hello world',
      _time: '2024-01-01T00:00:00.000000001Z',
    });
    const big = 'x'.repeat(600 * 1024);
    expect(p.parse(`2024-01-01T00:00:01Z stderr P ${big}`)).toBeUndefined();
    expect(p.parse(`2024-01-01T00:00:01Z stderr P ${big}`)).toBeUndefined();
    const e = p.parse('2024-01-01T00:00:01Z stderr F end')!;
    expect((e.message as string).length).toBe(MAX_JOINED_BYTES);
    expect(e.truncated).toBe(true);
  });

  it('no parser throws or hangs on arbitrary input', () => {
    let seed = 3;
    const r = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const alphabet = [
      '{',
      '}',
      '"',
      '\\',
      '=',
      ' ',
      '<',
      '>',
      '[',
      ']',
      'a',
      '1',
      ':',
      '-',
      'P',
      'F',
      'stdout',
      '\n',
      '\u00e9',
      'T',
    ];
    const parsers = (['json', 'logfmt', 'plain', 'syslog', 'docker', 'cri'] as const).map((type) =>
      createParser({ type }),
    );
    for (let n = 0; n < 3000; n++) {
      const line = Array.from({ length: Math.floor(r() * 40) }, () => alphabet[Math.floor(r() * alphabet.length)]).join(
        '',
      );
      for (const p of parsers) p.parse(line);
    }
  });

  it('plain keeps the line', () => {
    expect(createParser({ type: 'plain' }).parse('  spaced  ')).toEqual({ message: '  spaced  ' });
  });
});
