/**
 * isFlatJsonObject (src/util/flat-json.ts) against JSON.parse: what it accepts JSON.parse reads as an object
 * with at least one member, on seeded random lines and their mutations; the flat lines logs are made of
 * are accepted; and hostile lines are refused without the pattern's backtracking running away.
 */
import { describe, expect, it } from 'vitest';
import { isFlatJsonObject, MAX_FLAT_CHECK_CHARS } from '../../../src/util/flat-json.js';
import { testSeed } from '../../support/helpers.js';

const REPLAY = 'npx vitest run test/unit/util/flat-json.test.ts';

/** What JSON.parse makes of it: an object with at least one member, or not. */
function parsesToObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0;
  } catch {
    return false;
  }
}

describe('a flat JSON object, told by its text', () => {
  it('accepts only what JSON.parse reads as an object, over random lines and their mutations (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_FLAT_JSON_SEED', REPLAY);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    // Mostly what JSON allows, now and then what it does not.
    const either = <T>(valid: readonly T[], invalid: readonly T[]) => (rnd() < 0.97 ? pick(valid) : pick(invalid));
    const ws = () => either(['', '', '', ' ', '\n', '\t', '\r\n '], ['\u00a0', '\v']);
    const scalar = () =>
      either(
        [
          '0',
          '-0',
          '12',
          '-2.5e3',
          '1E+2',
          'true',
          'false',
          'null',
          '"x"',
          '""',
          '"a\\"b"',
          '"\\u00e9\\n"',
          '"é ✓ 🙂"',
          '"\ud800"',
          '"{[,:]}"',
        ],
        [
          '01',
          '1.',
          '.5',
          '1e',
          '+1',
          'nul',
          'True',
          '"\\u12"',
          '"\\x41"',
          '"tab\there"',
          "'single'",
          '[1]',
          '{"n":1}',
          'NaN',
        ],
      );
    const key = () => either(['"a"', '"b"', '""', '"host.name"', '"a\\"q"', '"\\u0061"', '"é"'], ['a', '"k']);
    const line = () => {
      const members = Array.from(
        { length: 1 + Math.floor(rnd() * 4) },
        () => `${ws()}${key()}${ws()}${either([':'], ['=', ''])}${ws()}${scalar()}${ws()}`,
      );
      return `${either(['{'], [' {', '['])}${members.join(either([','], [';', ',,']))}${either(['}'], ['} ', ']', ''])}`;
    };
    const mutate = (text: string) => {
      const at = Math.floor(rnd() * (text.length + 1));
      return pick([
        () => text.slice(0, at) + text.slice(at + 1),
        () => text.slice(0, at) + pick(['"', '\\', ',', '}', '{', ':', '\u0001', ' ', '1', 'e']) + text.slice(at),
        () => text.slice(0, at),
      ])();
    };
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      let text = line();
      if (rnd() < 0.3) text = mutate(text);
      const flat = isFlatJsonObject(text);
      if (flat) {
        accepted++;
        expect(parsesToObject(text), `${replay}: accepted ${JSON.stringify(text)}`).toBe(true);
        // Nothing around the braces: a field can be spliced in before the closing one.
        expect(text.charAt(0) + text.charAt(text.length - 1), `${replay}: ${JSON.stringify(text)}`).toBe('{}');
      }
    }
    // The generator makes valid flat lines often: the comparison above is not an empty one.
    expect(accepted, replay).toBeGreaterThan(1000);
  });

  it('accepts the flat lines logs are made of, however they are spaced', () => {
    for (const text of [
      '{"_time":"2026-11-01T00:00:00.001Z","status":304,"request_time":0.01,"cached":false,"user":null}',
      '{"level": "info", "msg": "a \\"quoted\\" word \\u00e9", "n": -1.5e-3}',
      '{ "a" : 1 }',
      '{"message":"✓ 🙂 é"}',
    ]) {
      expect(isFlatJsonObject(text), text).toBe(true);
      expect(parsesToObject(text), text).toBe(true);
    }
    // Left to JSON.parse: nested values, an empty object, text around the braces, a line past the limit.
    for (const text of [
      '{"a":{"b":1}}',
      '{"a":[1]}',
      '{}',
      ' {"a":1}',
      '{"a":1}\n',
      `{"a":"${'x'.repeat(MAX_FLAT_CHECK_CHARS)}"}`,
    ]) {
      expect(isFlatJsonObject(text), text.slice(0, 40)).toBe(false);
    }
  });

  it('refuses hostile lines of the largest length it checks', () => {
    const n = MAX_FLAT_CHECK_CHARS - 16;
    const hostile = [
      `{"a":"${'x'.repeat(n)}`,
      `{"a":"${'\\"'.repeat(n / 2)}`,
      `{${'"a":1,'.repeat(n / 6)}`,
      `{${'"a":1,'.repeat(n / 6)}"b":1 x}`,
      `{"a":1${' '.repeat(n)}x`,
      `{"a":${'1'.repeat(n)}x}`,
      `{"a":"${'\\u00e9'.repeat(n / 6)}\\u00g}`,
      `{${'"a"  :  1  ,  '.repeat(n / 15)}}`,
    ];
    for (const text of hostile) expect(isFlatJsonObject(text), text.slice(0, 40)).toBe(false);
  });
});
