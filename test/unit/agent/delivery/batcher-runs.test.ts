/**
 * Runs of lines (a file source's lines that nothing reads, handed on a run at a time) must batch exactly as
 * their lines one by one: the same batches, cut at the same line by max_events and max_bytes, and the same
 * offsets acknowledged when each batch is durable.
 */
import { describe, expect, it } from 'vitest';
import { Batcher, type Mark } from '../../../../src/agent/delivery/batcher.js';
import type { Stream } from '../../../../src/agent/sources/source.js';
import { testSeed } from '../../../support/helpers.js';

interface Handed {
  body: string;
  count: number;
  marks: { stream: string; offset: number; route?: number }[];
}

const stream = (id: string): Stream => ({ id, source: 'file', acknowledge: () => undefined });

function collector(limits: { maxEvents: number; maxBytes: number }) {
  const handed: Handed[] = [];
  const batcher = new Batcher({ ...limits, timeoutMs: 60_000 }, async (batch, count, marks) => {
    // The parts' memory is reused once this settles: what is kept is a copy.
    handed.push({
      body: Buffer.concat(batch).toString('latin1'),
      count,
      marks: marks.map((m) => ({ stream: m.stream.id, offset: m.offset, ...(m.route ? { route: m.route } : {}) })),
    });
  });
  return { handed, batcher };
}

describe('the batcher, given runs of lines', () => {
  it('cuts a run at max_events and at the line that reaches max_bytes, acknowledging up to the cut', async () => {
    const s = stream('a');
    const { handed, batcher } = collector({ maxEvents: 3, maxBytes: 1 << 20 });
    // Five lines of 7 bytes, starting at offset 100 of the stream: the run's mark is just past the last newline.
    const run = Buffer.from('{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}');
    await batcher.add(run, { stream: s, offset: 140, generation: 0 }, undefined, undefined, 5);
    await batcher.flush();
    expect(handed).toEqual([
      { body: '{"n":1}\n{"n":2}\n{"n":3}', count: 3, marks: [{ stream: 'a', offset: 124 }] },
      { body: '{"n":4}\n{"n":5}', count: 2, marks: [{ stream: 'a', offset: 140 }] },
    ]);

    const bytes = collector({ maxEvents: 100, maxBytes: 20 });
    await bytes.batcher.add(run, { stream: s, offset: 140, generation: 0, route: 2 }, undefined, undefined, 5);
    await bytes.batcher.flush();
    // Line by line a batch is cut after the line that reaches 20 bytes: the third (23 bytes with newlines).
    expect(bytes.handed.map((h) => [h.body, h.count, h.marks])).toEqual([
      ['{"n":1}\n{"n":2}\n{"n":3}', 3, [{ stream: 'a', offset: 124, route: 2 }]],
      ['{"n":4}\n{"n":5}', 2, [{ stream: 'a', offset: 140, route: 2 }]],
    ]);
  });

  it('cuts a run larger than a stage at max_events when other lines came in while it waited to be encoded', async () => {
    const handed: { count: number; marks: number[] }[] = [];
    const slots: (() => void)[] = [];
    // An encoder that holds every stage until let go: the run waits for a slot while source B adds lines.
    const encode = (stage: Buffer) => new Promise<Buffer>((r) => slots.push(() => r(Buffer.from(stage))));
    const b = new Batcher(
      { maxEvents: 20, maxBytes: 4096, timeoutMs: 60_000 },
      async (_parts, count, marks) => void handed.push({ count, marks: marks.map((m) => m.offset) }),
      encode,
    );
    const [a, other] = [stream('a'), stream('b')];
    const line = (n: number) => `{"n":${n},"pad":"${'x'.repeat(1000)}"}`;
    // Three batches cut (by bytes) and their stages encoding: every slot is taken.
    for (let i = 0; i < 15; i++) void b.add(Buffer.from(line(i)), undefined);
    expect(slots).toHaveLength(3);
    const lines = [1, 2, 3, 4, 5].map((n) => `{"n":${n}}`).concat([`{"big":"${'y'.repeat(6000)}"}`]);
    const run = Buffer.from(lines.join('\n'));
    const waiting = b.add(run, { stream: a, offset: 10_000, generation: 0 }, undefined, undefined, 6);
    for (let i = 0; i < 18; i++)
      void b.add(Buffer.from(`{"b":${i}}`), { stream: other, offset: (i + 1) * 8, generation: 0 });
    // Now the encoder lets every stage go, as it comes.
    const pump = setInterval(() => slots.splice(0).forEach((go) => go()), 1);
    try {
      await waiting;
      await b.flush();
    } finally {
      clearInterval(pump);
    }
    expect(
      handed.every((h) => h.count <= 20),
      JSON.stringify(handed),
    ).toBe(true);
    expect(handed.reduce((n, h) => n + h.count, 0)).toBe(15 + 6 + 18);
  });

  it('batches random runs exactly as their lines one by one, from two streams (seeded)', async () => {
    const { rnd, replay } = testSeed(
      'FERRY_BATCHER_RUNS_SEED',
      'npx vitest run test/unit/agent/delivery/batcher-runs.test.ts',
    );
    for (let round = 0; round < 60; round++) {
      const limits = { maxEvents: 1 + Math.floor(rnd() * 40), maxBytes: 20 + Math.floor(rnd() * 3000) };
      const streams = [stream('a'), stream('b')];
      const offsets = [0, 0];
      // Each step: a run of 1 - 12 lines from one of the streams, as the file source hands it on.
      const steps: { s: number; lines: Buffer[]; end: number }[] = [];
      for (let i = 0; i < 40; i++) {
        const s = rnd() < 0.7 ? 0 : 1;
        const lines = Array.from({ length: 1 + Math.floor(rnd() * 12) }, (_, k) =>
          Buffer.from(JSON.stringify({ s, i, k, pad: 'x'.repeat(Math.floor(rnd() * 200)) })),
        );
        offsets[s] = offsets[s]! + lines.reduce((a, l) => a + l.length + 1, 0);
        steps.push({ s, lines, end: offsets[s]! });
      }
      const one = collector(limits);
      const runs = collector(limits);
      for (const { s, lines, end } of steps) {
        let at = end - lines.reduce((a, l) => a + l.length + 1, 0);
        for (const l of lines) {
          at += l.length + 1;
          const mark: Mark = { stream: streams[s]!, offset: at, generation: 0 };
          await one.batcher.add(l, mark);
        }
        const run = Buffer.from(lines.map((l) => l.toString('latin1')).join('\n'), 'latin1');
        await runs.batcher.add(
          run,
          { stream: streams[s]!, offset: end, generation: 0 },
          undefined,
          undefined,
          lines.length,
        );
      }
      await one.batcher.flush();
      await runs.batcher.flush();
      expect(runs.handed, `${replay}, round ${round}, limits ${JSON.stringify(limits)}`).toEqual(one.handed);
      expect(one.handed.every((h) => h.count <= limits.maxEvents)).toBe(true);
    }
  });
});
