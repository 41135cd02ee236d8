import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { forEachLine } from '../../../../src/agent/sources/lines.js';

async function collect(chunks: (string | Buffer)[], max: number) {
  const out: [string, boolean][] = [];
  const stats = await forEachLine(
    Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))),
    max,
    async (l, t) => void out.push([l, t]),
  );
  return { out, stats };
}

describe('line reading', () => {
  it('splits across chunk boundaries, drops CR of CRLF, keeps a last line without newline', async () => {
    const { out, stats } = await collect(['ab', 'c\r\nde', 'f\n\ng', 'h'], 100);
    expect(out).toEqual([
      ['abc', false],
      ['def', false],
      ['', false],
      ['gh', false],
    ]);
    expect(stats).toEqual({ lines: 4, truncated: 0 });
  });

  it('cuts a long line at the limit, marks it, skips the rest of it and goes on', async () => {
    const long = 'x'.repeat(5 * 1024 * 1024);
    const chunks = [];
    for (let i = 0; i < long.length; i += 65536) chunks.push(long.slice(i, i + 65536));
    const { out, stats } = await collect(['before\n', ...chunks, '\nafter\n'], 1024 * 1024);
    expect(out.map(([l, t]) => [l.length, t])).toEqual([
      [6, false],
      [1024 * 1024, true],
      [5, false],
    ]);
    expect(out[2]![0]).toBe('after');
    expect(stats).toEqual({ lines: 3, truncated: 1 });
  });

  it('never splits a UTF-8 character at the cut', async () => {
    const { out } = await collect(['aé\n'], 2); // "a" + the first byte of "é"
    expect(out).toEqual([['a', true]]);
  });

  it('a line exactly at the limit is whole', async () => {
    expect((await collect(['abcd\n'], 4)).out).toEqual([['abcd', false]]);
  });
});
