import { describe, expect, it } from 'vitest';
import { addedField, Event, FieldsOnRead } from '../../../src/agent/event.js';
import { isFlatJsonObject } from '../../../src/util/flat-json.js';
import { withoutMember } from '../../../src/util/json-members.js';
import { testSeed } from '../../support/helpers.js';

const line = '{"level":"info","msg":"hi"}';

describe('an event owns its text', () => {
  it("ships the line's own text, with added fields spliced in before its closing brace", () => {
    const e = Event.of(JSON.parse(line) as Record<string, unknown>, line);
    e.add(addedField('host.name', 'h1'));
    e.add(addedField('n', 2));
    expect(e.keepsText).toBe(true);
    expect(e.line()).toBe('{"level":"info","msg":"hi","host.name":"h1","n":2}');
    expect(JSON.parse(e.line())).toEqual(e.data);
  });

  it('drops the text on any other change, so the line always says the event', () => {
    const changes: [string, (e: Event) => void][] = [
      ['set', (e) => e.set('msg', 'changed')],
      ['set a new key', (e) => e.set('extra', 1)],
      ['add a key it has', (e) => e.add(addedField('msg', 'again'))],
    ];
    for (const [what, change] of changes) {
      const e = Event.of(JSON.parse(line) as Record<string, unknown>, line);
      e.add(addedField('host.name', 'h1'));
      change(e);
      expect(e.keepsText, what).toBe(false);
      expect(JSON.parse(e.line()), what).toEqual(e.data);
    }
    const untouched = Event.of(JSON.parse(line) as Record<string, unknown>, line);
    untouched.delete('absent');
    expect(untouched.line()).toBe(line);
  });

  it('keeps no text that cannot take a spliced field, and clones apart', () => {
    expect(Event.of({}, '{}').keepsText).toBe(false);
    expect(Event.of({ message: 'x' }, 'x').keepsText).toBe(false);
    const a = Event.of(JSON.parse(line) as Record<string, unknown>, line);
    const b = a.clone();
    b.set('msg', 'only b');
    a.add(addedField('only', 'a'));
    expect(JSON.parse(a.line())).toEqual({ level: 'info', msg: 'hi', only: 'a' });
    expect(JSON.parse(b.line())).toEqual({ level: 'info', msg: 'only b' });
  });
});

describe('an event keeps its text through put and delete', () => {
  it('splices a field it lacks, and cuts a member out of its text', () => {
    const e = Event.of(JSON.parse(line) as Record<string, unknown>, line);
    e.put('slow', true);
    e.delete('level');
    expect(e.keepsText).toBe(true);
    expect(e.line()).toBe('{"msg":"hi","slow":true}');
    e.delete('slow');
    expect(e.line()).toBe('{"msg":"hi"}');
    // A key it has is set, and the text goes; the last member goes with the text too.
    e.put('msg', 'changed');
    expect(e.keepsText).toBe(false);
    const last = Event.of({ a: 1 }, '{"a":1}');
    last.delete('a');
    expect(last.line()).toBe('{}');
  });

  it('cuts members out of any JSON object as JSON.parse reads it, duplicates and escapes included (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_JSON_MEMBERS_SEED', 'npx vitest run test/unit/agent/event.test.ts');
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const ws = () => pick(['', ' ', '\n', '\t ', '\r\n']);
    const value = (depth: number): string =>
      depth > 2
        ? pick(['1', '-2.5e3', 'true', 'null', '"x"', '"a\\"b,}]"'])
        : pick([
            () => pick(['0', '12', 'false', '"s"', '"\\u0041\\\\"', '"{[,:]}"']),
            () =>
              `[${ws()}${Array.from({ length: Math.floor(rnd() * 3) }, () => value(depth + 1)).join(`${ws()},${ws()}`)}${ws()}]`,
            () => object(depth + 1),
          ])();
    // Keys of JSON's own characters (`,`, `:`): their quoted text can be found across two strings.
    const keys = ['a', 'b', 'a\\"q', '\\u0061', 'é', '', ',', ':', 'x y', 'a,', 'k'.repeat(70)];
    const object = (depth: number): string =>
      `{${ws()}${Array.from({ length: Math.floor(rnd() * 5) }, () => `"${pick(keys)}"${ws()}:${ws()}${value(depth)}`).join(`${ws()},${ws()}`)}${ws()}}`;
    for (let i = 0; i < 3000; i++) {
      const text = object(0);
      const fields = JSON.parse(text) as Record<string, unknown>;
      for (const key of [...Object.keys(fields), 'absent']) {
        const rest = { ...fields };
        delete rest[key];
        // Told the key is there (as an event knows from its fields) or not: the same members go.
        for (const present of Object.hasOwn(fields, key) ? [false, true] : [false]) {
          const cut = withoutMember(text, key, present);
          if (Object.keys(rest).length === 0) expect(cut, `${replay}: ${text}`).toBeUndefined();
          else {
            expect(JSON.parse(cut!), `${replay}: ${text} without ${key}`).toEqual(rest);
            // The members left keep their order and their text.
            expect(Object.keys(JSON.parse(cut!) as object), `${replay}: ${text} without ${key}`).toEqual(
              Object.keys(rest),
            );
          }
        }
      }
    }
  });
});

describe('an event made from its text, parsed when read', () => {
  it('ships and reads as the event parsed at once, through any changes (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_EVENT_TEXT_SEED', 'npx vitest run test/unit/agent/event.test.ts');
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    // Keys the lines hold and the changes name: escaped, JSON's own characters, a prototype's, long.
    const keys = ['a', 'b', 'host.name', 'x y', 'a,', ':', '__proto__', 'é', 'k'.repeat(70), 'a"q'];
    const scalars = ['1', '-2.5', 'true', 'null', '"v"', '"a\\"b"', '"\\u0061"', '"\\\\"'];
    const line = () =>
      `{${Array.from(
        { length: 1 + Math.floor(rnd() * 5) },
        () => `${JSON.stringify(pick(keys))}:${rnd() < 0.2 ? JSON.stringify(pick(keys)) : pick(scalars)}`,
      ).join(pick([',', ', ']))}}`;
    const values = [1, 'x', null, true, { n: 1 }, [2], 'host.name'];
    const added = keys.map((k) => addedField(k, pick(values)));
    /** A change, its choices drawn once, to make on both events. */
    const change = (): [string, (e: Event) => unknown] => {
      const key = pick(keys);
      const value = pick(values);
      const f = pick(added);
      return pick<[string, (e: Event) => unknown]>([
        [`add ${f.key}`, (e) => e.add(f)],
        [`add ${f.key}`, (e) => e.add(f)],
        [`put ${key}`, (e) => e.put(key, value)],
        [`set ${key}`, (e) => e.set(key, value)],
        [`delete ${key}`, (e) => e.delete(key)],
        [`get ${key}`, (e) => e.get(key)],
        [`has ${key}`, (e) => e.has(key)],
        ['replace', (e) => e.replace({ only: value })],
        ['clone', (e) => e.clone()],
      ]);
    };
    const onRead = new FieldsOnRead();
    let made = 0;
    for (let i = 0; i < 3000; i++) {
      const text = line();
      if (!isFlatJsonObject(text)) continue;
      made++;
      let lazy = Event.ofText(text, onRead);
      let eager = Event.of(JSON.parse(text) as Record<string, unknown>, text);
      const steps: string[] = [];
      for (let k = Math.floor(rnd() * 6); k > 0; k--) {
        const [what, make] = change();
        steps.push(what);
        const why = `${replay}: ${text} after ${steps.join('; ')}`;
        const [a, b] = [make(lazy), make(eager)];
        if (a instanceof Event && b instanceof Event) {
          // A branch of the flow: the copy goes on, and the original ships as it was.
          const [l0, e0] = [lazy.line(), eager.line()];
          [lazy, eager] = [a, b];
          expect(l0, why).toBe(e0);
        } else expect(a, why).toEqual(b);
        expect(lazy.keepsText, why).toBe(eager.keepsText);
        expect(lazy.line(), why).toBe(eager.line());
      }
      expect(lazy.data, `${replay}: ${text} after ${steps.join('; ')}`).toEqual(eager.data);
    }
    expect(made, replay).toBeGreaterThan(2000);
  });

  it('are made from their text while few are read, and parsed at once for a stretch when most are read or fail the check', () => {
    const policy = new FieldsOnRead();
    const run = (n: number, read: boolean) => {
      let fromText = 0;
      for (let i = 0; i < n; i++) {
        if (!policy.fromText()) continue;
        fromText++;
        const e = Event.ofText('{"a":1}', policy);
        if (read) e.get('a');
      }
      return fromText;
    };
    expect(run(10_000, false)).toBe(10_000);
    // Every event read: after the window that saw it, the rest go parsed at once.
    expect(run(10_000, true)).toBeLessThan(10_000);
    expect(run(50_000, true)).toBe(0);
    // After the stretch the text is tried again, and kept while nothing reads it.
    const later = run(100_000, false);
    expect(later).toBeGreaterThan(50_000);
    expect(run(10_000, false)).toBe(10_000);
    // Lines that fail the check (nested values) are not checked for a stretch either.
    let checked = 0;
    for (let i = 0; i < 60_000; i++) {
      if (!policy.fromText()) continue;
      checked++;
      policy.noteFailed();
    }
    expect(checked).toBeLessThan(10_000);
  });
});
