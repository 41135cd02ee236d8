import type { LogEvent, Parser } from './parser.js';

const SEVERITY = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'];
const FACILITY = ['kern', 'user', 'mail', 'daemon', 'auth', 'syslog', 'lpr', 'news', 'uucp', 'cron', 'authpriv', 'ftp', 'ntp', 'security', 'console', 'solaris-cron',
  'local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const RFC5424 = /^<(\d{1,3})>(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) (-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (.*))?$/s;
const RFC3164 = /^<(\d{1,3})>([A-Z][a-z]{2}) ([ \d]\d) (\d{2}:\d{2}:\d{2}) (\S+) ([^:[\s]+)(?:\[([^\]]*)\])?:? ?(.*)$/s;

/**
 * Syslog lines, RFC 5424 or RFC 3164 (`auto` tries 5424 first). Fields: facility, severity, hostname,
 * appname, procid, msgid, structured data (`sd.<id>.<param>`), message; the timestamp becomes `_time`.
 * RFC 3164 stamps carry no year or zone: the year is the one that puts the stamp no more than a day
 * ahead of now, read as UTC. A line that is not syslog is kept as `{message}`.
 */
export class SyslogParser implements Parser {
  constructor(private readonly rfc: '3164' | '5424' | 'auto' = 'auto', private readonly now: () => Date = () => new Date()) {}

  parse(line: string): LogEvent {
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
        for (const p of el[2]!.matchAll(/\s*([^=\s]+)="((?:[^"\\]|\\.)*)"/g)) {
          out[`sd.${el[1]}.${p[1]}`] = p[2]!.replace(/\\(["\\\]])/g, '$1');
        }
      }
    }
    // A UTF-8 BOM may start the message (RFC 5424 6.4).
    setIf(out, 'message', m[9]?.replace(/^\uFEFF/, ''));
    return out;
  }

  private rfc3164(m: RegExpExecArray): LogEvent {
    const out: LogEvent = priority(Number(m[1]));
    const month = MONTHS.indexOf(m[2]!);
    if (month >= 0) {
      const now = this.now();
      const [h, mi, s] = m[4]!.split(':').map(Number) as [number, number, number];
      let t = Date.UTC(now.getUTCFullYear(), month, Number(m[3]!.trim()), h, mi, s);
      if (t > now.getTime() + 86_400_000) t = Date.UTC(now.getUTCFullYear() - 1, month, Number(m[3]!.trim()), h, mi, s);
      out._time = new Date(t).toISOString();
    }
    out.hostname = m[5];
    out.appname = m[6];
    setIf(out, 'procid', m[7]);
    out.message = m[8];
    return out;
  }
}

function priority(pri: number): LogEvent {
  return { facility: FACILITY[pri >> 3] ?? String(pri >> 3), severity: SEVERITY[pri & 7] };
}

function setIf(o: LogEvent, k: string, v: string | undefined): void {
  if (v !== undefined && v !== '') o[k] = v;
}
