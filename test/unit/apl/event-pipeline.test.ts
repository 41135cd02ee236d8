/**
 * APL pipelines over single events (src/apl/js/) against hostile fields and queries: names an object
 * inherits are no fields, `__proto__` is a field like any other, extend-valid keeps what the event held,
 * an expression that throws gives null and is counted, regular expressions are RE2's, and a query that
 * would multiply out of bounds is refused at load.
 */
import { describe, expect, it } from 'vitest';
import { compileEventPipeline, type EventFields } from '../../../src/apl/js/pipeline.js';
import { Event } from '../../../src/agent/event.js';

const fields = (e: EventFields) => JSON.parse(JSON.stringify(e.data)) as Record<string, unknown>;

function run(
  query: string,
  data: Record<string, unknown>,
  text?: string,
): { kept: boolean; event: Event; errors: number } {
  const errors: unknown[] = [];
  const p = compileEventPipeline(query, (err) => errors.push(err));
  const event = Event.of(data, text);
  const kept = p.run(event);
  return { kept, event, errors: errors.length };
}

describe('event pipelines against hostile events and queries', () => {
  it('reads only the fields an event has: inherited names are null', () => {
    const { event } = run('extend a = constructor, b = toString, c = isnull(hasOwnProperty)', { x: 1 }, '{"x":1}');
    expect(JSON.parse(event.line())).toEqual({ x: 1, a: null, b: null, c: true });
  });

  it('takes __proto__ as a field like any other, in the fields and in the text alike', () => {
    const { event } = run("extend ['__proto__'] = parse_json('{\"b\":5}') | extend c = b", { a: 1 }, '{"a":1}');
    expect(JSON.parse(event.line())).toEqual(JSON.parse('{"a":1,"__proto__":{"b":5},"c":null}'));
    expect(fields(event)).toEqual(JSON.parse(event.line()));
    const reordered = run('project-reorder a', JSON.parse('{"__proto__":{"x":1},"a":1}') as Record<string, unknown>);
    expect(Object.keys(JSON.parse(reordered.event.line()) as object)).toEqual(['a', '__proto__']);
  });

  it('extend-valid keeps the field as the event held it where the value is not valid', () => {
    const q = "extend-valid s = extract('([0-9]+)', 1, s)";
    expect(JSON.parse(run(q, { s: 'abc' }).event.line())).toEqual({ s: 'abc' });
    expect(JSON.parse(run(q, { s: 'a42' }).event.line())).toEqual({ s: '42' });
    expect(JSON.parse(run(q, { s: true }).event.line())).toEqual({ s: true });
  });

  it('compares a field holding a real as a real beside a whole number', () => {
    for (const [where, kept] of [
      ['dur > 0', true],
      ['dur == 0', false],
      ['dur != 0', true],
      ['dur in (0, 1)', false],
      ['dur between (1 .. 2)', false],
    ] as const)
      expect(run(`where ${where}`, { dur: where.includes('between') ? 2.5 : 0.25 }).kept, where).toBe(kept);
  });

  it('redacts strings inside objects by their dotted name, and nulls a value it cannot mask within its bound', () => {
    const secret = { user: { name: 'ann', password: 'hunter2', keys: ['k1'] }, note: 'pw hunter2' };
    expect(JSON.parse(run("redact @'hunter2'", structuredClone(secret)).event.line())).toEqual({
      user: { name: 'ann', password: '*******', keys: ['k1'] },
      note: 'pw *******',
    });
    expect(JSON.parse(run("redact @'.+' on ['user.pass']*", structuredClone(secret)).event.line())).toEqual({
      user: { name: 'ann', password: '*******', keys: ['k1'] },
      note: 'pw hunter2',
    });
    // A mask of 100 characters per character, over 20,000 characters: past a MiB, so null, and counted.
    const r = run(`redact replaceToken='${'#'.repeat(100)}' @'.'`, { s: 'x'.repeat(20_000), t: 'ok' });
    expect(JSON.parse(r.event.line())).toEqual({ s: null, t: '#'.repeat(200) });
    expect(r.errors).toBe(1);
  });

  it('lets no secret through a redact: past the stack the field is null, in arrays and numbers it is masked', () => {
    let deep: unknown = 'hunter2';
    for (let i = 0; i < 20_000; i++) deep = { a: deep };
    const r = run("redact @'hunter2'", { a: deep, password: 'hunter2' });
    expect(JSON.parse(r.event.line())).toEqual({ a: null, password: '*******' });
    expect(r.errors).toBe(1);
    let nested: unknown = 'hunter2';
    for (let i = 0; i < 150; i++) nested = { a: nested };
    // Past 100 levels the value is masked as its JSON text, as the store keeps it.
    expect(run("redact @'hunter2'", { n: nested }).event.line()).not.toContain('hunter2');
    expect(JSON.parse(run("redact @'4111'", { tags: ['x 4111'], card: 41111111, n: 7 }).event.line())).toEqual({
      tags: ['x ****'],
      card: '****1111',
      n: 7,
    });
  });

  it('parses fields out of a text, null where the text does not match; parse-where drops those events', () => {
    const q = "parse msg with method ' ' path:string ' ' status:long";
    expect(JSON.parse(run(q, { msg: 'GET /a 200' }).event.line())).toMatchObject({
      method: 'GET',
      path: '/a',
      status: 200,
    });
    expect(JSON.parse(run(q, { msg: 'nope' }).event.line())).toMatchObject({ method: null, path: null, status: null });
    expect(run(q.replace('parse', 'parse-where'), { msg: 'nope' }).kept).toBe(false);
    expect(run(q, {}).kept).toBe(true);
  });

  it('gives null for an expression that fails on an event, counts it, and lets the event go on', () => {
    const r = run('extend t = todatetime(n), u = unixtime_seconds_todatetime(n), s = strrep(x, 1000)', {
      n: 1e300,
      x: 'y'.repeat(100_000),
    });
    expect(r.kept).toBe(true);
    expect(JSON.parse(r.event.line())).toMatchObject({ t: null, u: null, s: null });
    expect(r.errors).toBe(3);
  });

  it('reads regular expressions as RE2 does: \\pL and named groups, no lookbehind', () => {
    expect(
      JSON.parse(
        run("extend w = extract('\\\\pL+', 0, s), n = extract('(?P<d>[0-9]+)', 1, s)", { s: '12 été' }).event.line(),
      ),
    ).toMatchObject({
      w: 'été',
      n: '12',
    });
    expect(() => compileEventPipeline("where s matches regex '(?<=a)b'")).toThrow(/line 1, column 9: matches regex/);
    // Backtracking would take seconds here; RE2 is linear.
    expect(run("where s matches regex '^(a+)+$'", { s: `${'a'.repeat(40)}!` }).kept).toBe(false);
  });

  it('refuses at load a query whose lets multiply past the bounds, naming line and column', () => {
    const lets = Array.from({ length: 16 }, (_, i) => `let a${i + 1} = strcat(a${i}, a${i});`).join('\n');
    expect(() => compileEventPipeline(`let a0 = 'x';\n${lets}\nextend y = a16`)).toThrow(
      /line \d+, column \d+: .*terms/,
    );
  });

  it('bounds what a function makes from an event: a conversation joined past a million characters is null and counted', () => {
    const big = 'z'.repeat(600_000);
    const r = run("extend j = genai_concat_contents(c, ' '), f = series_fir(s, pack_array(1, 1))", {
      c: [
        { role: 'user', content: big },
        { role: 'assistant', content: big },
      ],
      s: [1, 2, 'x', 4],
    });
    expect(JSON.parse(r.event.line())).toMatchObject({ j: null, f: [0.5, 1.5, 1, 2] });
    expect(r.errors).toBe(1);
  });

  it('refuses at load, with line and column, what has no meaning for one event or a path it cannot read', () => {
    expect(() => compileEventPipeline('extend b = bin_auto(_time)')).toThrow(
      /line 1, column 12: bin_auto\(\) takes its bin size from a query's time range/,
    );
    expect(() => compileEventPipeline("extend v = array_extract(a, '$..deep')")).toThrow(
      /line 1, column 12: array_extract\(\): the path \$\.\.deep is beyond/,
    );
    expect(() => compileEventPipeline('extend v = extract_all(p, s)')).toThrow(/line 1, column 12: extract_all\(\)/);
  });

  it('draws a new rand() for every event', () => {
    const p = compileEventPipeline('extend r = rand()');
    const seen = new Set(
      Array.from({ length: 20 }, () => {
        const e = Event.of({});
        p.run(e);
        return (JSON.parse(e.line()) as { r: number }).r;
      }),
    );
    expect(seen.size).toBe(20);
  });
});
