/**
 * The `route`, `sample`, `throttle` and `dedupe` transforms in a running agent: events reach the sinks
 * that read each route's output; what each drops is counted by reason; every line's checkpoint moves past
 * what was dropped or routed away (started again, the agent reads nothing twice); wiring mistakes name the
 * key path.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hashOf } from '../../../../src/agent/transforms/sample.js';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { tempDir, until } from '../../../support/helpers.js';

afterEach(stopAgentsAndReceivers);

const sink = (name: string, inputs: string, url: string) =>
  `  ${name}: { type: axiom, inputs: [${inputs}], dataset: ${name}, url: "${url}", token: t, batch: { timeout: 50ms } }\n`;

const metric = (text: string, name: string) => {
  const m = new RegExp(`^${name.replace(/[{}"=,]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};

/** Started again on `config`, the agent ships only a line appended now: nothing it read before comes again. */
async function readsOnlyWhatComes(dir: string, log: string, config: (url: string) => string, line: object) {
  const receiver = await startReceiver();
  writeFileSync(join(dir, 'agent.yaml'), config(receiver.url));
  const agent = startAgent(join(dir, 'agent.yaml'));
  await agent.waitLog('agent running');
  appendFileSync(log, `${JSON.stringify(line)}\n`);
  await until('the new line', () => receiver.events.length >= 1);
  await new Promise((r) => setTimeout(r, 300));
  expect(receiver.events).toEqual([line]);
  agent.child.kill('SIGTERM');
  expect(await agent.exited).toBe(0);
}

function validate(dir: string, yaml: string) {
  const config = join(dir, 'agent.yaml');
  writeFileSync(config, yaml);
  return spawnSync(process.execPath, ['dist/src/cli/main.js', 'validate', config], { encoding: 'utf8' });
}

describe('route', () => {
  it('sends each event to every route whose condition holds, the rest to _unmatched, and checkpoints past all', async () => {
    const dir = tempDir('ferry-route-');
    const log = join(dir, 'app.log');
    const events = [
      { status: 500, d: 2000 },
      { status: 200, d: 10 },
      { status: 503, d: 10 },
      { status: 200, d: 5000 },
      { status: 404 },
    ];
    writeFileSync(log, events.map((e) => `${JSON.stringify(e)}\n`).join(''));
    const [errors, slow, rest] = [await startReceiver(), await startReceiver(), await startReceiver()];
    const config = (sinks: string) => `agent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }
service: { enabled: false }
sources:
  file: { type: file, include: ["${log}"], start_at: beginning }
transforms:
  parse: { type: parse, inputs: [file], parser: json }
  split: { type: route, inputs: [parse], routes: { errors: "status >= 500", slow: "d > 1000", unread: "status == 404" } }
sinks:
${sinks}`;
    writeFileSync(
      join(dir, 'agent.yaml'),
      config(
        sink('errors', 'split.errors', errors.url) +
          sink('slow', 'split.slow', slow.url) +
          sink('rest', 'split._unmatched', rest.url),
      ),
    );
    const agent = startAgent(join(dir, 'agent.yaml'));
    const api = (await agent.waitLog('agent running')).api as string;
    await until('the routed events', () => errors.events.length === 2 && slow.events.length === 2);
    await until('the unmatched event', () => rest.events.length === 1);
    expect(errors.events).toEqual([events[0], events[2]]);
    // The first event matched both routes: each sink has its own copy.
    expect(slow.events).toEqual([events[0], events[3]]);
    // 404 matched a route nobody reads: it is not unmatched, it goes nowhere, counted.
    expect(rest.events).toEqual([events[1]]);
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metric(metrics, 'ferry_transform_events_in_total{transform="split"}')).toBe(5);
    expect(metric(metrics, 'ferry_transform_events_out_total{transform="split"}')).toBe(4);
    expect(metric(metrics, 'ferry_transform_events_dropped_total{transform="split",reason="unread"}')).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);

    // Started again, nothing is read twice: every path of every line was acknowledged, those it passed by too.
    await readsOnlyWhatComes(
      dir,
      log,
      (url) => config(sink('all', 'split.errors, split.slow, split._unmatched', url)),
      {
        status: 201,
        d: 1,
      },
    );
  });

  it('refuses wiring mistakes and bad conditions at load, naming the key path', () => {
    const dir = tempDir('ferry-route-');
    const base = (transforms: string, inputs: string) => `agent: { data_dir: ${join(dir, 'state')} }
service: { enabled: false }
sources: { file: { type: file, include: ["${dir}/*.log"] } }
transforms:
${transforms}
sinks: { out: { type: axiom, inputs: [${inputs}], url: "http://127.0.0.1:9", token: t, dataset: d } }
`;
    const split = `  split: { type: route, inputs: [file], routes: { errors: "status >= 500" } }`;
    const cases: [string, string, string][] = [
      [
        split,
        'split.nope',
        'sinks.out.inputs.0: transforms.split has no output "nope" (its outputs: errors, _unmatched)',
      ],
      [
        split,
        'split',
        'sinks.out.inputs.0: transforms.split has named outputs: read one of them (split.errors, split._unmatched)',
      ],
      [
        `  split: { type: route, inputs: [file], routes: { errors: "status >=" } }`,
        'split.errors',
        'transforms.split.routes.errors: line 1, column 10: expected an expression',
      ],
      [
        `  split: { type: route, inputs: [file], routes: { errors: "strlen(m)" } }`,
        'split.errors',
        'transforms.split.routes.errors: line 1, column 1: a condition must be a bool, not long',
      ],
      [
        `  split: { type: route, inputs: [file], routes: { _unmatched: "true" } }`,
        'split._unmatched',
        'transforms.split.routes._unmatched: _unmatched is the output of events no route matches',
      ],
      [
        `${split}\n  split.errors: { type: apl, inputs: [file], query: "where true" }`,
        'split.errors',
        'the name is also the output "errors" of transforms.split',
      ],
      [
        `  thin: { type: sample, inputs: [file], rate: 10, keep: "level ==" }`,
        'thin',
        'transforms.thin.keep: line 1, column 9: expected an expression',
      ],
      [
        `  once: { type: dedupe, inputs: [file], fields: [] }`,
        'once',
        'transforms.once.fields: name at least one field',
      ],
      [
        `${split}\n  join: { type: multiline, inputs: [split.errors], preset: java }`,
        'join',
        'transforms.join.inputs: a multiline transform joins lines of a stream, and reads what a route sends on',
      ],
      [
        `${split}\n  tag: { type: apl, inputs: [split._unmatched], query: "extend a = 1" }\n  cri: { type: parse, inputs: [tag], parser: cri }`,
        'cri',
        'transforms.cri.inputs: a parse transform joins lines of a stream',
      ],
      [`  calm: { type: throttle, inputs: [file], events_per_second: 0 }`, 'calm', 'transforms.calm.events_per_second'],
    ];
    for (const [transforms, inputs, error] of cases) {
      const r = validate(dir, base(transforms, inputs));
      expect(r.status, `${error}\n${r.stdout}`).not.toBe(0);
      expect(r.stderr).toContain(error);
      expect(r.stderr).not.toContain('    at ');
    }
  });

  it('ferry validate prints each route as bound, and the sample', () => {
    const dir = tempDir('ferry-route-');
    const r = validate(
      dir,
      `agent: { data_dir: ${join(dir, 'state')} }
service: { enabled: false }
sources: { file: { type: file, include: ["${dir}/*.log"] } }
transforms:
  split: { type: route, inputs: [file], routes: { errors: "status >= 500", slow: "d > 1s" } }
  thin: { type: sample, inputs: [split._unmatched], rate: 10, key: trace_id, keep: "level == 'error'" }
sinks: { out: { type: axiom, inputs: [split.errors, thin], url: "http://127.0.0.1:9", token: t, dataset: d } }
`,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.split('\n').slice(1)).toEqual([
      '  source file (file)',
      '  transform split (route) <- file',
      '    | errors: (status >= 500)',
      '    | slow: (d > 1s)',
      '    | _unmatched: no condition holds',
      '  transform thin (sample) <- split._unmatched',
      '    | keeps 1 in 10 by the hash of trace_id',
      '    | keeps every event where (level == "error")',
      '  sink out (axiom) <- split.errors, thin',
      '',
    ]);
  });
});

describe('sample, throttle and dedupe', () => {
  it('drop what they should, count it by reason, and acknowledge the lines of what they dropped', async () => {
    const dir = tempDir('ferry-thin-');
    const log = join(dir, 'app.log');
    // 40 traces of 5 events; every 10th trace's events are errors; each event repeated once.
    const lines: string[] = [];
    for (let t = 0; t < 40; t++)
      for (let i = 0; i < 5; i++) {
        const e = JSON.stringify({
          trace_id: `t${t}`,
          i,
          level: t % 10 === 0 ? 'error' : 'info',
          host: { name: `h${i % 2}` },
        });
        lines.push(e, e);
      }
    writeFileSync(log, lines.map((l) => `${l}\n`).join(''));
    const [sampled, throttled] = [await startReceiver(), await startReceiver()];
    const config = (sinks: string) => `agent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }
service: { enabled: false }
sources:
  file: { type: file, include: ["${log}"], start_at: beginning }
transforms:
  parse: { type: parse, inputs: [file], parser: json }
  once: { type: dedupe, inputs: [parse], fields: [trace_id, i], window: 1h }
  thin: { type: sample, inputs: [once], rate: 4, key: trace_id, keep: "level == 'error'" }
  calm: { type: throttle, inputs: [once], events_per_second: 3, key: host.name }
sinks:
${sinks}`;
    writeFileSync(
      join(dir, 'agent.yaml'),
      config(sink('sampled', 'thin', sampled.url) + sink('throttled', 'calm', throttled.url)),
    );
    const agent = startAgent(join(dir, 'agent.yaml'));
    const api = (await agent.waitLog('agent running')).api as string;
    const keptTraces = Array.from({ length: 40 }, (_, t) => t).filter((t) => t % 10 === 0 || hashOf(`t${t}`) % 4 === 0);
    await until('the sampled events', () => sampled.events.length === keptTraces.length * 5);
    // Whole traces, each event once (the repeats were dropped before).
    expect([...new Set(sampled.events.map((e) => e.trace_id))]).toEqual(keptTraces.map((t) => `t${t}`));
    expect(sampled.events.filter((e) => e.trace_id === 't0').map((e) => e.i)).toEqual([0, 1, 2, 3, 4]);
    // 200 distinct events read at once, two hosts: the first 3 of each host pass, within the same second.
    await until('the throttled events', () => throttled.events.length >= 6);
    await new Promise((r) => setTimeout(r, 500));
    const byHost = (h: string) => throttled.events.filter((e) => (e.host as { name: string }).name === h).length;
    expect(byHost('h0')).toBeGreaterThanOrEqual(3);
    expect(byHost('h1')).toBeGreaterThanOrEqual(3);
    expect(throttled.events.length).toBeLessThan(40);
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metric(metrics, 'ferry_transform_events_dropped_total{transform="once",reason="duplicate"}')).toBe(200);
    expect(metric(metrics, 'ferry_transform_events_out_total{transform="once"}')).toBe(200);
    expect(metric(metrics, 'ferry_transform_events_dropped_total{transform="thin",reason="sampled"}')).toBe(
      200 - keptTraces.length * 5,
    );
    expect(metric(metrics, 'ferry_transform_events_dropped_total{transform="calm",reason="throttled"}')).toBe(
      200 - throttled.events.length,
    );
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);

    // Started again, nothing is read twice: the lines of every dropped event were acknowledged.
    await readsOnlyWhatComes(dir, log, (url) => config(sink('plain', 'once', url)), { trace_id: 'new', i: 0 });
  });
});
