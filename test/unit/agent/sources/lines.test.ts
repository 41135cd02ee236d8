import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { forEachLine, LineSplitter } from '../../../../src/agent/sources/lines.js';
import { testSeed } from '../../../support/helpers.js';

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

/** Every line a splitter gives, through runs where it can (a run's lines apart), with where each ends. */
function drain(sp: LineSplitter, chunk: Buffer, base: number, runBytes?: number): { line: string; end: number }[] {
  sp.feed(chunk);
  const out: { line: string; end: number }[] = [];
  for (;;) {
    const run = runBytes === undefined ? undefined : sp.nextRun(runBytes);
    if (run) {
      expect(run.raw.length).toBeLessThanOrEqual(Math.max(runBytes!, run.raw.indexOf(0x0a) < 0 ? run.raw.length : 0));
      const lines = run.raw.toString('latin1').split('\n');
      expect(lines).toHaveLength(run.lines);
      // Each line's end, counted back from the run's.
      let end = base + run.end - run.raw.length - 1;
      for (const line of lines) out.push({ line, end: (end += line.length + 1) });
      continue;
    }
    const l = sp.next();
    if (!l) return out;
    out.push({ line: (l.raw ? l.raw.toString('latin1') : l.text) + (l.truncated ? '<cut>' : ''), end: base + l.end });
  }
}

describe('runs of lines (shipped as they are)', () => {
  it('takes whole object-looking lines up to the byte bound, and leaves any other line to next()', () => {
    const sp = new LineSplitter(100, false);
    sp.feed(Buffer.from('{"a":1}\n{"b":2}\n{"c":3}\nplain\n{"d":4}\r\n{"e":5}\n\n{"f":6}\n{"g"'));
    expect(sp.nextRun(14)!.lines).toBe(1);
    sp.feed(Buffer.from('{"a":1}\n{"b":2}\n{"c":3}\nplain\n{"d":4}\r\n{"e":5}\n\n{"f":6}\n{"g"'));
    const first = sp.nextRun(15)!;
    expect([first.raw.toString(), first.lines, first.end]).toEqual(['{"a":1}\n{"b":2}', 2, 16]);
    const second = sp.nextRun(1000)!;
    expect([second.raw.toString(), second.lines, second.end]).toEqual(['{"c":3}', 1, 24]);
    expect(sp.nextRun(1000)).toBeUndefined();
    expect(sp.next()!.raw!.toString()).toBe('plain');
    // A line ending in CR is no run's (the CR is not shipped), nor is a blank one.
    expect(sp.nextRun(1000)).toBeUndefined();
    expect(sp.next()!.raw!.toString()).toBe('{"d":4}');
    expect(sp.nextRun(1000)!.raw.toString()).toBe('{"e":5}');
    expect(sp.nextRun(1000)).toBeUndefined();
    expect(sp.next()!.raw!.toString()).toBe('');
    expect(sp.nextRun(1000)!.raw.toString()).toBe('{"f":6}');
    // The unfinished last line waits for the next chunk; while it is begun, no run starts.
    expect(sp.nextRun(1000)).toBeUndefined();
    expect(sp.next()).toBeUndefined();
    sp.feed(Buffer.from(':7}\n{"h":8}\n'));
    expect(sp.nextRun(1000)).toBeUndefined();
    expect(sp.next()!.raw!.toString()).toBe('{"g":7}');
    expect(sp.nextRun(1000)!.raw.toString()).toBe('{"h":8}');
    expect(sp.stats).toEqual({ lines: 11, truncated: 0 });
  });

  it('leaves a line over the line limit to next(), which cuts it; a splitter that decodes makes no runs', () => {
    const sp = new LineSplitter(8, false);
    sp.feed(Buffer.from('{"a":1}\n{"long":123}\n'));
    expect(sp.nextRun(1000)!.raw.toString()).toBe('{"a":1}');
    expect(sp.nextRun(1000)).toBeUndefined();
    expect(sp.next()).toMatchObject({ truncated: true });
    const decoding = new LineSplitter(100);
    decoding.feed(Buffer.from('{"a":1}\n'));
    expect(decoding.nextRun(1000)).toBeUndefined();
  });

  it('gives the same lines, ends and counts as next() alone, over random chunks (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_RUNS_SEED', 'npx vitest run test/unit/agent/sources/lines.test.ts');
    for (let round = 0; round < 200; round++) {
      const maxLine = 1 + Math.floor(rnd() * 40);
      const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
      let text = '';
      const n = Math.floor(rnd() * 60);
      for (let i = 0; i < n; i++)
        text +=
          pick([
            `{"i":${i}}`,
            '{}',
            `{"p":"${'x'.repeat(Math.floor(rnd() * 50))}"}`,
            'plain',
            '',
            '{',
            '}',
            `{"r":1}\r`,
          ]) + '\n';
      if (rnd() < 0.5) text += '{"tail":1}';
      const bytes = Buffer.from(text, 'latin1');
      const cuts = [0];
      while (cuts.at(-1)! < bytes.length) cuts.push(Math.min(bytes.length, cuts.at(-1)! + 1 + Math.floor(rnd() * 64)));
      const runBytes = 1 + Math.floor(rnd() * 100);
      const lone = new LineSplitter(maxLine, false);
      const runs = new LineSplitter(maxLine, false);
      const a: { line: string; end: number }[] = [];
      const b: { line: string; end: number }[] = [];
      for (let i = 1; i < cuts.length; i++) {
        const chunk = bytes.subarray(cuts[i - 1], cuts[i]);
        a.push(...drain(lone, chunk, cuts[i - 1]!));
        b.push(...drain(runs, Buffer.from(chunk), cuts[i - 1]!, runBytes));
      }
      expect(b, `${replay}, round ${round}`).toEqual(a);
      expect(runs.stats, `${replay}, round ${round}`).toEqual(lone.stats);
    }
  });
});
