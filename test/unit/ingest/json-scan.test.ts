/**
 * The relay's byte-level JSON object check against JSON.parse, over seeded random documents and their
 * mutations: it never says "an object" of what JSON.parse refuses or reads as another value, and it says
 * so of every object JSON.parse takes (within its depth).
 */
import { isUtf8 } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { isJsonObject as found, NOT_SURE, OBJECT_ON_LINES } from '../../../src/ingest/json-scan.js';

const isJsonObject = (b: Uint8Array, start: number, end: number) => found(b, start, end) !== NOT_SURE;
import { testSeed } from '../../support/helpers.js';

function parsesAsObject(text: string): boolean {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

function randomJson(rnd: () => number, depth = 0): string {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const ws = () => pick(['', '', ' ', '\t', '\r\n', '  ']);
  const str = () =>
    JSON.stringify(
      Array.from({ length: Math.floor(rnd() * 6) }, () =>
        pick(['a', 'é', '✓', '😀', '"', '\\', '/', '\n', '\u0001', '\u2028', '\ud800', 'x']),
      ).join(''),
    ).replace(/\\u0001/g, pick(['\\u0001', '\\u0001', '\\uABCD']));
  const kind = depth > 4 ? Math.floor(rnd() * 5) : Math.floor(rnd() * 7);
  switch (kind) {
    case 0:
      return str();
    case 1:
      return pick(['0', '-0', '1', '-12', '3.25', '1e5', '1E+2', '-0.5e-3', '12345678901234567890', '1.0']);
    case 2:
      return pick(['true', 'false', 'null']);
    case 3:
    case 4:
      return str();
    case 5:
      return `[${ws()}${Array.from({ length: Math.floor(rnd() * 4) }, () => `${ws()}${randomJson(rnd, depth + 1)}${ws()}`).join(',')}]`;
    default:
      return randomObject(rnd, depth + 1);
  }
}

function randomObject(rnd: () => number, depth = 0): string {
  const ws = () => [' ', '', '\n', '\t'][Math.floor(rnd() * 4)]!;
  const members = Array.from(
    { length: Math.floor(rnd() * 5) },
    () =>
      `${ws()}${JSON.stringify(['k', 'é', '__proto__', '', 'a"b'][Math.floor(rnd() * 5)])}${ws()}:${ws()}${randomJson(rnd, depth)}${ws()}`,
  );
  return `{${members.join(',')}${members.length ? '' : ws()}}`;
}

/** A document with a few bytes changed, inserted or removed. */
function mutate(rnd: () => number, text: string): Buffer {
  const bytes = [...Buffer.from(text)];
  const alphabet = [...'{}[]":,\\ \t\n0123456789-+.eEtrufalsn']
    .map((c) => c.charCodeAt(0))
    .concat([0x00, 0x1f, 0x7f, 0xc3]);
  for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
    const at = Math.floor(rnd() * (bytes.length + 1));
    const op = rnd();
    const b = alphabet[Math.floor(rnd() * alphabet.length)]!;
    if (op < 0.4) bytes.splice(at, 1);
    else if (op < 0.7) bytes.splice(at, 0, b);
    else bytes[Math.min(at, bytes.length - 1)] = b;
  }
  return Buffer.from(bytes);
}

describe('isJsonObject', () => {
  it('agrees with JSON.parse on random documents and their mutations (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_JSON_SCAN_SEED', 'npx vitest run test/unit/ingest/json-scan.test.ts');
    let objects = 0;
    let mutants = 0;
    for (let n = 0; n < 20_000; n++) {
      const doc = rnd() < 0.8 ? randomObject(rnd) : randomJson(rnd);
      const bytes = Buffer.from(`${[' ', '', '\n'][n % 3]}${doc}${['', ' ', '\r\n'][n % 3]}`);
      const expected = parsesAsObject(bytes.toString('utf8'));
      if (expected) objects++;
      // Every object JSON.parse takes is seen as one, so the relay's fast path is the common one.
      expect(isJsonObject(bytes, 0, bytes.length), `${replay}: ${bytes.toString()}`).toBe(expected);
      const m = mutate(rnd, doc);
      if (!isUtf8(m)) continue;
      mutants++;
      if (isJsonObject(m, 0, m.length))
        expect(parsesAsObject(m.toString('utf8')), `${replay}: ${JSON.stringify(m.toString('utf8'))}`).toBe(true);
    }
    expect(objects).toBeGreaterThan(10_000);
    expect(mutants).toBeGreaterThan(10_000);
  });

  it('says when an object has line breaks between its tokens', () => {
    const pretty = Buffer.from(JSON.stringify({ a: [1, { b: 'x\ny' }] }, null, 2));
    expect(found(pretty, 0, pretty.length)).toBe(OBJECT_ON_LINES);
    const escaped = Buffer.from('{"a":"x\\ny\\r"}');
    expect(found(escaped, 0, escaped.length)).not.toBe(OBJECT_ON_LINES);
    expect(isJsonObject(escaped, 0, escaped.length)).toBe(true);
  });

  it('reads only its range of the buffer, and leaves what it cannot follow to JSON.parse', () => {
    const b = Buffer.from('xx{"a":[1,{"b":null}]}yy');
    expect(isJsonObject(b, 2, b.length - 2)).toBe(true);
    expect(isJsonObject(b, 2, b.length - 3)).toBe(false);
    for (const text of [
      '{"a":1}{}',
      '{"a":01}',
      '{"a":1.}',
      '{"a":"\\x"}',
      '{"a":tru}',
      '[{}]',
      '"{}"',
      '{,}',
      '{"a" 1}',
    ])
      expect(isJsonObject(Buffer.from(text), 0, text.length), text).toBe(false);
    const deep = `{"a":${'['.repeat(600)}${']'.repeat(600)}}`;
    expect(parsesAsObject(deep)).toBe(true);
    expect(isJsonObject(Buffer.from(deep), 0, deep.length)).toBe(false);
  });
});
