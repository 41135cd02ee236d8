import { describe, expect, it } from 'vitest';
import { addedField, Event } from '../../../src/agent/event.js';

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
      ['delete', (e) => e.delete('level')],
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
