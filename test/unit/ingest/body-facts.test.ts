import { describe, expect, it } from 'vitest';
import { BodyScreen, screenBody } from '../../../src/ingest/body-facts.js';
import { rng } from '../../../bench/access-log.js';

const SEED = Number(process.env.FERRY_BODY_FACTS_SEED ?? Date.now() % 1_000_000);

describe('the body screen', () => {
  it('tells whether a body holds the key "data" and a run of 19 digits', () => {
    expect(screenBody(Buffer.from('{"a":1}\n{"data":{}}'))).toEqual({ dataKey: true, longDigitRun: false });
    expect(screenBody(Buffer.from('{"data2":1,"id":12345678901234567890}'))).toEqual({
      dataKey: false,
      longDigitRun: true,
    });
    expect(screenBody(Buffer.alloc(0))).toEqual({ dataKey: false, longDigitRun: false });
  });

  it(`finds "data" however the body is cut into pieces, even of a byte or two (seed ${SEED})`, () => {
    const r = rng(SEED);
    const alphabet = ['"', 'd', 'a', 't', 'x', '{', ':'];
    for (let round = 0; round < 2000; round++) {
      const len = Math.floor(r() * 60);
      let text = '';
      for (let i = 0; i < len; i++) text += alphabet[Math.floor(r() * alphabet.length)];
      if (r() < 0.3) {
        const at = Math.floor(r() * (text.length + 1));
        text = `${text.slice(0, at)}"data"${text.slice(at)}`;
      }
      const screen = new BodyScreen();
      const bytes = Buffer.from(text);
      for (let from = 0; from < bytes.length;) {
        const to = Math.min(bytes.length, from + 1 + Math.floor(r() * 8));
        screen.push(bytes.subarray(from, to));
        from = to;
      }
      if (screen.facts().dataKey !== text.includes('"data"'))
        throw new Error(`seed ${SEED}, round ${round}: ${JSON.stringify(text)} gave ${screen.facts().dataKey}`);
    }
  });
});
