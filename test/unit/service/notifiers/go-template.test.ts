import { describe, expect, it } from 'vitest';
import { parseTemplate, renderTemplate, TemplateError } from '../../../../src/service/notifiers/go-template.js';

const json = (v: unknown) => (v === null || v === undefined ? 'null' : JSON.stringify(v));
const render = (src: string, data: unknown = {}) =>
  renderTemplate(parseTemplate(src), data, { jsonObject: json, jsonArray: json });

describe('Go text/template subset', () => {
  it("renders Axiom's documented default webhook body to JSON", () => {
    const body = `{
  "action": "{{.Action}}",
  "event": {
    "monitorID": "{{.MonitorID}}",
    "body": "{{.Body}}",
    "value": {{.Value}},
    "matchedEvent": {{jsonObject .MatchedEvent}},
    "groupKeys": {{jsonArray .GroupKeys}},
    "groupValues": {{jsonArray .GroupValues}}
  }
}`;
    const out = render(body, {
      Action: 'Open',
      MonitorID: 'mon_1',
      Body: 'Current value of 3 is above the threshold value of 2',
      Value: 3,
      MatchedEvent: null,
      GroupKeys: ['host'],
      GroupValues: ['a'],
    });
    expect(JSON.parse(out)).toEqual({
      action: 'Open',
      event: {
        monitorID: 'mon_1',
        body: 'Current value of 3 is above the threshold value of 2',
        value: 3,
        matchedEvent: null,
        groupKeys: ['host'],
        groupValues: ['a'],
      },
    });
  });

  it('has if/else if/else, with, range with variables, break and continue, and trim markers', () => {
    expect(render('{{if eq .A "Open"}}up{{else if eq .A "Closed"}}down{{else}}?{{end}}', { A: 'Closed' })).toBe('down');
    expect(render('{{with .E}}{{.x}}{{else}}none{{end}}', { E: { x: 7 } })).toBe('7');
    expect(render('{{with .E}}{{.x}}{{else}}none{{end}}', { E: null })).toBe('none');
    expect(
      render('{{range $i, $v := .L}}{{if eq $i 2}}{{break}}{{end}}{{$i}}={{$v}};{{end}}', { L: ['a', 'b', 'c'] }),
    ).toBe('0=a;1=b;');
    expect(render('{{range .L}}{{if eq . 2}}{{continue}}{{end}}{{.}}{{else}}empty{{end}}', { L: [1, 2, 3] })).toBe(
      '13',
    );
    expect(render('{{range .L}}x{{else}}empty{{end}}', { L: [] })).toBe('empty');
    expect(render('a  {{- " b " -}}  c\n{{/* gone */}}d')).toBe('a b c\nd');
    expect(render('{{$x := 1}}{{if true}}{{$x = 2}}{{end}}{{$x}}')).toBe('2');
    expect(render('{{range $k, $v := .M}}{{$k}}:{{$v}} {{end}}', { M: { b: 2, a: 1 } })).toBe('a:1 b:2 ');
  });

  it("has Go's functions, pipes and parenthesised pipelines, printing values as Go does", () => {
    expect(
      render('{{.V | printf "%.2f"}} {{printf "%d%%" 42}} {{printf "%s=%v" "k" .L}}', { V: 3.14159, L: [1, 'a'] }),
    ).toBe('3.14 42% k=[1 a]');
    expect(
      render('{{len .L}} {{index .L 1}} {{index .M "k"}} {{(index .L 0).x}}', { L: [{ x: 9 }, 'b'], M: { k: 'v' } }),
    ).toBe('2 b v 9');
    expect(
      render('{{and 1 0}} {{or 0 "" "z"}} {{not true}} {{lt 1 2}} {{ge "b" "a"}} {{ne .A nil}}', { A: null }),
    ).toBe('0 z false true true false');
    expect(render('{{html "<a&b>"}} {{urlquery "a b&c"}} {{print 1 2 "x" 3}}')).toBe('&lt;a&amp;b&gt; a+b%26c 1 2x3');
    expect(
      render('{{.N}} {{.F}} {{.B}} {{.Z}} {{.M}}', { N: 57347, F: 0.5, B: true, Z: null, M: { b: 1, a: 'x' } }),
    ).toBe('57347 0.5 true <nil> map[a:x b:1]');
  });

  it('refuses what it cannot run with the line, at parse or at render', () => {
    const parseErr = (src: string) => {
      try {
        parseTemplate(src);
      } catch (e) {
        expect(e).toBeInstanceOf(TemplateError);
        return (e as Error).message;
      }
      return 'parsed';
    };
    expect(parseErr('{{if .A}}x')).toBe('line 1: {{if}} without {{end}}');
    expect(parseErr('a\nb {{end}}')).toBe('line 2: unexpected {{end}}');
    expect(parseErr('{{.A')).toBe('line 1: unclosed action');
    expect(parseErr('{{"abc}}')).toBe('line 1: unclosed action');
    expect(parseErr('{{break}}')).toBe('line 1: {{break}} outside {{range}}');
    expect(parseErr('{{template "x"}}')).toBe('line 1: {{template}} is not supported in a notifier template');
    expect(parseErr('{{.A ]}}')).toBe('line 1: unexpected "]"');
    expect(() => render('\n{{nosuch 1}}')).toThrow('line 2: function "nosuch" not defined');
    expect(() => render('{{.Missing}}', { A: 1 })).toThrow("line 1: can't evaluate field Missing");
    expect(() => render('{{.A.B}}', { A: null })).toThrow('line 1: nil pointer evaluating .B');
    expect(() => render('{{range 100000000}}{{.}}{{end}}')).toThrow(/larger than|too many steps/);
  });
});
