import { oneOf, str, type OptionSpecs } from '../../config/options.js';
import type { LogEvent, Parser, ParserSpec } from './parser.js';

const SEVERITY = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'];
const FACILITY = [
  'kern',
  'user',
  'mail',
  'daemon',
  'auth',
  'syslog',
  'lpr',
  'news',
  'uucp',
  'cron',
  'authpriv',
  'ftp',
  'ntp',
  'security',
  'console',
  'solaris-cron',
  'local0',
  'local1',
  'local2',
  'local3',
  'local4',
  'local5',
  'local6',
  'local7',
];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const RFC5424 = /^<(\d{1,3})>(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) (-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (.*))?$/s;
/**
 * RFC 3164, and what rsyslog and syslog-ng write to /var/log/syslog, messages and auth.log: the same line
 * without its `<PRI>` (`Nov 23 19:05:01 myhost sshd[123]: text`), or with an RFC 3339 stamp instead
 * (`2026-11-23T19:05:01.123456+01:00 myhost sshd[123]: text`, rsyslog's high-precision file format).
 */
const RFC3164_HEADER =
  /^(?:<(\d{1,3})>)?(?:([A-Z][a-z]{2}) ([ \d]\d) (\d{2}:\d{2}:\d{2})|(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2}))) (\S+) ([^:[\s]+)(?:\[([^\]]*)\])?:? ?/;
/** The header, then the message: anything, which ends no match sooner than the header alone. */
const RFC3164 = new RegExp(`${RFC3164_HEADER.source}(.*)$`, 's');

/**
 * Syslog lines, RFC 5424 or RFC 3164 (`auto` tries 5424 first), as sent (with `<PRI>`) or as written to
 * files (without). Fields: facility and severity (when there is a PRI), hostname, appname, procid, msgid,
 * structured data (`sd.<id>.<param>`), message; the timestamp becomes `_time`. RFC 3164 stamps carry no
 * year or zone: the year is the one that puts the stamp no more than a day ahead of now, and the wall
 * clock is read in `timezone` (an IANA name, `UTC`, or `local`: the agent's host, which wrote the file).
 * A line that is not syslog is kept as `{message}`.
 */
export class SyslogParser implements Parser {
  private readonly zone: WallClock;

  constructor(
    private readonly rfc: '3164' | '5424' | 'auto' = 'auto',
    private readonly now: () => Date = () => new Date(),
    timezone = 'local',
  ) {
    this.zone = new WallClock(timezone);
  }

  parse(line: string): LogEvent {
    this.stampedAt = undefined;
    if (this.rfc !== '3164') {
      const m = RFC5424.exec(line);
      if (m) return this.rfc5424(m);
    }
    if (this.rfc !== '5424') {
      const m = RFC3164.exec(line);
      if (m) return this.rfc3164(m);
    }
    return { message: line };
  }

  /**
   * Where parse(line)'s `message` starts in the line, which it always ends: 0 for a line that is not
   * syslog (the whole line is its message), -1 when the event has no message. Lets a caller reuse the
   * fields of the part before it, which lines from one sender mostly share.
   */
  messageAt(line: string): number {
    if (this.rfc !== '3164') {
      const m = RFC5424.exec(line);
      if (m) {
        const tail = m[9];
        if (!tail) return -1;
        const at = line.length - tail.length + (tail.charCodeAt(0) === 0xfeff ? 1 : 0);
        return at < line.length ? at : -1;
      }
    }
    if (this.rfc !== '5424') {
      // Without the message (`(.*)$`, which matches whatever follows): the header's end is where it starts.
      const m = RFC3164_HEADER.exec(line);
      if (m) return m[0].length;
    }
    return 0;
  }

  private rfc5424(m: RegExpExecArray): LogEvent {
    const out: LogEvent = priority(Number(m[1]));
    const nil = (v: string) => (v === '-' ? undefined : v);
    if (nil(m[3]!)) out._time = m[3];
    setIf(out, 'hostname', nil(m[4]!));
    setIf(out, 'appname', nil(m[5]!));
    setIf(out, 'procid', nil(m[6]!));
    setIf(out, 'msgid', nil(m[7]!));
    if (m[8] !== '-') {
      for (const el of m[8]!.matchAll(/\[([^\s\]]+)((?:[^\]\\]|\\.)*)\]/g)) {
        // Sticky: each parameter is matched where the last one ended, so text that is no parameter ends
        // the element at once instead of being tried from every position (quadratic on a long element).
        const param = /\s*([^=\s]+)="((?:[^"\\]|\\.)*)"/y;
        for (let p = param.exec(el[2]!); p; p = param.exec(el[2]!)) {
          out[`sd.${el[1]}.${p[1]}`] = p[2]!.replace(/\\(["\\\]])/g, '$1');
        }
      }
    }
    // A UTF-8 BOM may start the message (RFC 5424 6.4).
    setIf(out, 'message', m[9]?.replace(/^\uFEFF/, ''));
    return out;
  }

  /** The last RFC 3164 stamp read and its instant: lines come many to a second, so it is mostly the next one's. */
  private lastStamp = '';
  private lastTime: string | undefined;
  private lastStampAt = 0;
  /**
   * When the instant of the last parse()'s RFC 3164 stamp was worked out (its year depends on the clock
   * then); undefined when that line had no such stamp. A caller that keeps the fields for later lines
   * keeps them no longer than the parser keeps the instant.
   */
  stampedAt: number | undefined;

  /** An RFC 3164 stamp (no year, no zone) as an instant: this zone, the year that puts it at most a day ahead. */
  private stampTime(mon: string, dd: string, hms: string): string | undefined {
    const stamp = `${mon} ${dd} ${hms}`;
    const nowMs = Date.now();
    // Reused for a minute: the year it infers can only change at New Year.
    if (stamp === this.lastStamp && nowMs - this.lastStampAt < 60_000) {
      this.stampedAt = this.lastStampAt;
      return this.lastTime;
    }
    const month = MONTHS.indexOf(mon);
    let time: string | undefined;
    if (month >= 0) {
      const now = this.now();
      const [h, mi, s] = hms.split(':').map(Number) as [number, number, number];
      const day = Number(dd.trim());
      const year = this.zone.yearOf(now.getTime());
      // The year that puts the stamp at most a day ahead: last year's December just after New Year,
      // next year's January just before it.
      const ahead = now.getTime() + 86_400_000;
      let t = this.zone.toEpoch(year, month, day, h, mi, s);
      if (t > ahead) t = this.zone.toEpoch(year - 1, month, day, h, mi, s);
      else {
        const next = this.zone.toEpoch(year + 1, month, day, h, mi, s);
        if (next <= ahead) t = next;
      }
      time = new Date(t).toISOString();
    }
    this.lastStamp = stamp;
    this.lastTime = time;
    this.lastStampAt = nowMs;
    this.stampedAt = nowMs;
    return time;
  }

  private rfc3164(m: RegExpExecArray): LogEvent {
    const out: LogEvent = m[1] !== undefined ? priority(Number(m[1])) : {};
    if (m[5] !== undefined) {
      out._time = m[5];
    } else {
      const time = this.stampTime(m[2]!, m[3]!, m[4]!);
      if (time) out._time = time;
    }
    out.hostname = m[6];
    out.appname = m[7];
    setIf(out, 'procid', m[8]);
    out.message = m[9];
    return out;
  }
}

/**
 * Wall-clock times of one time zone to instants. An offset is looked up once per zone and hour (through
 * Intl, which is slow) and then reused, so a file of syslog lines costs one lookup an hour of stamps.
 */
export class WallClock {
  private readonly parts: Intl.DateTimeFormat | undefined;
  private readonly offsets = new Map<number, number>();

  /** @param zone an IANA name (`Europe/Paris`), `UTC`, or `local`; throws RangeError for an unknown one */
  constructor(zone: string) {
    this.parts =
      zone === 'local'
        ? undefined
        : new Intl.DateTimeFormat('en-US', {
            timeZone: zone,
            hourCycle: 'h23',
            year: 'numeric',
            month: 'numeric',
            day: 'numeric',
            hour: 'numeric',
            minute: 'numeric',
            second: 'numeric',
          });
  }

  /** The calendar year in this zone at `epochMs`. */
  yearOf(epochMs: number): number {
    if (!this.parts) return new Date(epochMs).getFullYear();
    return new Date(epochMs + this.offsetAt(epochMs)).getUTCFullYear();
  }

  /** The instant at which the zone's clock showed this date and time (month 0-11). */
  toEpoch(year: number, month: number, day: number, h: number, mi: number, s: number): number {
    if (!this.parts) return new Date(year, month, day, h, mi, s).getTime();
    const asUtc = Date.UTC(year, month, day, h, mi, s);
    // The offset at the guess, then at the corrected instant (they differ only across a DST change).
    const first = asUtc - this.offsetAt(asUtc);
    return asUtc - this.offsetAt(first);
  }

  /** The zone's offset from UTC at an instant, in ms. */
  private offsetAt(epochMs: number): number {
    const hour = Math.floor(epochMs / 3_600_000);
    let off = this.offsets.get(hour);
    if (off === undefined) {
      const p = Object.fromEntries(this.parts!.formatToParts(new Date(hour * 3_600_000)).map((x) => [x.type, x.value]));
      off =
        Date.UTC(
          Number(p.year),
          Number(p.month) - 1,
          Number(p.day),
          Number(p.hour),
          Number(p.minute),
          Number(p.second),
        ) -
        hour * 3_600_000;
      if (this.offsets.size > 1000) this.offsets.clear();
      this.offsets.set(hour, off);
    }
    return off;
  }
}

function priority(pri: number): LogEvent {
  return { facility: FACILITY[pri >> 3] ?? String(pri >> 3), severity: SEVERITY[pri & 7] };
}

function setIf(o: LogEvent, k: string, v: string | undefined): void {
  if (v !== undefined && v !== '') o[k] = v;
}

type Rfc = '3164' | '5424' | 'auto';

/** The syslog parser's keys, which the network syslog source takes too. */
export const SYSLOG_OPTIONS = {
  rfc: oneOf(['3164', '5424', 'auto'], 'auto').doc('which RFC: `5424`, `3164`, or `auto` (5424 first)'),
  timezone: str('local')
    .doc(
      "the zone of RFC 3164 stamps, which carry none: an IANA name, `UTC` or `local` (the host's); the year is inferred across New Year",
    )
    .check((zone) => {
      if (zone === 'local') return undefined;
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: zone });
        return undefined;
      } catch {
        return `unknown time zone "${zone}" (an IANA name such as Europe/Paris, UTC, or local)`;
      }
    }),
} satisfies OptionSpecs;

export const syslogParser: ParserSpec<{ rfc: Rfc; timezone: string }, typeof SYSLOG_OPTIONS> = {
  type: 'syslog',
  summary:
    'RFC 5424 or RFC 3164 lines, as sent (`<13>Nov 23 19:05:01 host app[1]: text`) or as rsyslog and syslog-ng write files (without `<PRI>`, or with an RFC 3339 stamp)',
  options: SYSLOG_OPTIONS,
  configure: (v) => ({ rfc: v.rfc, timezone: v.timezone }),
  create: (s) => new SyslogParser(s.rfc, undefined, s.timezone),
};
