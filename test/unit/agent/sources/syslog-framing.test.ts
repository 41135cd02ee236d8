/** RFC 6587 framing of syslog over TCP: newlines, octet counts, both told apart, limits, any chunking. */
import { describe, expect, it } from 'vitest';
import { SyslogFramer, type Framing } from '../../../../src/agent/sources/syslog-framing.js';
import { procAddress } from '../../../../src/agent/sources/syslog.js';

/** The messages of a stream fed in pieces of `size` bytes. */
function frames(framing: Framing, stream: string, size: number, max = 64) {
  const f = new SyslogFramer(framing, max);
  const bytes = Buffer.from(stream);
  const out = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...f.push(bytes.subarray(i, i + size)));
  const last = f.end();
  if (last) out.push(last);
  return out.map((m) => (m.truncated ? `${m.bytes.toString()}…` : m.bytes.toString()));
}

describe('syslog framing', () => {
  it('reads newline, octet-counted and mixed streams alike however they are chunked', () => {
    const octet = (m: string) => `${Buffer.byteLength(m)} ${m}`;
    const cases: [Framing, string, string[]][] = [
      ['newline', '<13>one\n<13>two\r\n\n<13>three', ['<13>one', '<13>two', '<13>three']],
      [
        'octet_counted',
        `${octet('<13>a b')}${octet('<14>ünïcode\nwith newline')}`,
        ['<13>a b', '<14>ünïcode\nwith newline'],
      ],
      ['auto', `${octet('<13>counted')}<13>lined\n${octet('<13>again')}`, ['<13>counted', '<13>lined', '<13>again']],
      // Digits that are no length are a line after all.
      ['auto', '12345678901234 not a length\n', ['12345678901234 not a length']],
      ['auto', '12x not a length\n', ['12x not a length']],
      // A line that starts with digits and a space is a line: a count is followed by a message's <PRI>.
      ['auto', '200 OK from device\n<13>next\n', ['200 OK from device', '<13>next']],
    ];
    for (const [framing, stream, expected] of cases)
      for (const size of [1, 2, 3, 7, 1000])
        expect(frames(framing, stream, size), `${framing} by ${size}`).toEqual(expected);
  });

  it('cuts a message past the limit and marks it, and goes on with the next', () => {
    const long = 'x'.repeat(100);
    for (const size of [1, 5, 1000]) {
      expect(frames('newline', `<13>${long}\n<13>next\n`, size, 10)).toEqual(['<13>xxxxxx…', '<13>next']);
      expect(frames('octet_counted', `104 <13>${long}8 <13>next`, size, 10)).toEqual(['<13>xxxxxx…', '<13>next']);
    }
  });

  it('takes a message trickled in byte by byte whole, without joining the bytes again for each one', () => {
    const message = `<13>${'z'.repeat(60_000)}`;
    for (const framing of ['newline', 'octet_counted'] as const) {
      const stream = framing === 'newline' ? `${message}\n` : `${Buffer.byteLength(message)} ${message}`;
      expect(frames(framing, stream, 1, 64 * 1024)).toEqual([message]);
    }
  });

  it("names a socket's address as /proc/net/udp does", () => {
    expect(procAddress('127.0.0.1')).toBe('0100007F');
    expect(procAddress('0.0.0.0')).toBe('00000000');
    expect(procAddress('::1')).toBe('00000000000000000000000001000000');
    expect(procAddress('::')).toBe('00000000000000000000000000000000');
  });
});
