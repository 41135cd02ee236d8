/**
 * The `apl` transform in a running agent: events filtered and reshaped on their way to the sink; the lines
 * of dropped events acknowledged like delivered ones (a file's checkpoint moves past them, a relayed
 * request whose events are all dropped is answered 200); a query that cannot run refused at load, naming
 * the key, the line and the column.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { freePort, tempDir, until } from '../../../support/helpers.js';

afterEach(stopAgentsAndReceivers);

const line = (status: number, i: number) =>
  JSON.stringify({ status, req_duration_ms: i * 300, secret: `s${i}`, uri: `/r/${i}` });

describe('the apl transform', () => {
  it('ships what the query keeps, as it shapes it, and acknowledges the lines of dropped events', async () => {
    const dir = tempDir('ferry-apl-');
    const log = join(dir, 'app.log');
    writeFileSync(log, [500, 200, 503, 404, 200, 200].map((s, i) => `${line(s, i)}\n`).join(''));
    const config = (
      transforms: string,
      inputs: string,
    ) => `agent: { data_dir: ${join(dir, 'state')}, api: { enabled: false } }
service: { enabled: false }
sources:
  file: { type: file, include: ["${log}"], start_at: beginning }
${transforms}
sinks:
  out: { type: axiom, inputs: [${inputs}], dataset: d, url: "%URL%", token: t, batch: { timeout: 50ms } }
`;
    const shaped = config(
      `transforms:
  parse: { type: parse, inputs: [file], parser: json }
  shape:
    type: apl
    inputs: [parse]
    query: |
      where status >= 500
      | extend slow = req_duration_ms > 1000, kind = iff(status == 503, 'unavailable', 'error')
      | project-away secret`,
      'shape',
    );
    const receiver = await startReceiver();
    writeFileSync(join(dir, 'agent.yaml'), shaped.replace('%URL%', receiver.url));
    const agent = startAgent(join(dir, 'agent.yaml'));
    await until('2 events', () => receiver.events.length === 2);
    expect(receiver.events).toEqual([
      { status: 500, req_duration_ms: 0, uri: '/r/0', slow: false, kind: 'error' },
      { status: 503, req_duration_ms: 600, uri: '/r/2', slow: false, kind: 'unavailable' },
    ]);
    // The last three lines were dropped: a graceful stop checkpoints past them all the same.
    await new Promise((r) => setTimeout(r, 300));
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);

    // Started again without the filter, the agent ships only what comes after: nothing it dropped is read again.
    const plain = await startReceiver();
    writeFileSync(join(dir, 'agent.yaml'), config('', 'file').replace('%URL%', plain.url));
    const again = startAgent(join(dir, 'agent.yaml'));
    await again.waitLog('agent running');
    appendFileSync(log, `${line(201, 9)}\n`);
    await until('the new line', () => plain.events.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(plain.events).toEqual([{ status: 201, req_duration_ms: 2700, secret: 's9', uri: '/r/9' }]);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });

  it('answers a relayed request whose events it all drops with 200, not a timeout', async () => {
    const dir = tempDir('ferry-apl-');
    const receiver = await startReceiver();
    const port = await freePort();
    writeFileSync(
      join(dir, 'agent.yaml'),
      `agent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }
service: { enabled: false }
sources:
  apps: { type: http, address: "127.0.0.1:${port}", tokens: [app-token], queue_timeout: 3s }
transforms:
  errors: { type: apl, inputs: [apps], query: "where level == 'error'" }
sinks:
  out: { type: axiom, inputs: [errors], dataset: fallback, url: "${receiver.url}", token: t, batch: { timeout: 50ms } }
`,
    );
    const agent = startAgent(join(dir, 'agent.yaml'));
    const api = (await agent.waitLog('agent running')).api as string;
    const post = (events: object[]) =>
      fetch(`http://127.0.0.1:${port}/v1/ingest/app`, {
        method: 'POST',
        headers: { authorization: 'Bearer app-token', 'content-type': 'application/json' },
        body: JSON.stringify(events),
      });
    const quiet = await post([
      { level: 'info', n: 1 },
      { level: 'debug', n: 2 },
    ]);
    expect(quiet.status).toBe(200);
    const mixed = await post([
      { level: 'info', n: 3 },
      { level: 'error', n: 4 },
      { level: 'info', n: 5 },
    ]);
    expect(mixed.status).toBe(200);
    await until('the error', () => receiver.events.length === 1);
    expect(receiver.events).toEqual([{ level: 'error', n: 4 }]);
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metrics).toContain('ferry_transform_events_in_total{transform="errors"} 5');
    expect(metrics).toContain('ferry_transform_events_out_total{transform="errors"} 1');
    expect(metrics).toContain('ferry_transform_events_dropped_total{transform="errors",reason="where"} 4');
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });

  it('ferry validate prints the flow, and each apl pipeline as bound, with the types of what it makes', () => {
    const dir = tempDir('ferry-apl-');
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `agent: { data_dir: ${join(dir, 'state')} }
service: { enabled: false }
sources: { file: { type: file, include: ["${dir}/*.log"] } }
transforms:
  parse: { type: parse, inputs: [file], parser: json }
  shape: { type: apl, inputs: [parse], query: "where status >= 500 | extend slow = d > 1s, t = ago(1h) | project-away secret" }
sinks: { out: { type: axiom, inputs: [shape], url: "http://127.0.0.1:9", token: t, dataset: d } }
`,
    );
    const r = spawnSync(process.execPath, ['dist/src/cli/main.js', 'validate', config], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.split('\n').slice(1)).toEqual([
      '  source file (file)',
      '  transform parse (parse) <- file',
      '  transform shape (apl) <- parse',
      '    | where (status >= 500)',
      '    | extend slow: bool = (d > 1s), t: datetime = ago(1h0m0s)',
      '    | project-away secret',
      '  sink out (axiom) <- shape',
      '',
    ]);
  });

  it('refuses a query it cannot run at load, naming the key, the line and the column', () => {
    const dir = tempDir('ferry-apl-');
    const config = join(dir, 'agent.yaml');
    const cases: [string, string][] = [
      ['where status >= 500\n| summarize count()', 'line 2, column 3: summarize works on many events together'],
      ['where status >=', 'line 1, column 16: expected an expression'],
      [
        'extend p = geo_info_from_ip_address(ip)',
        'line 1, column 12: geo_info_from_ip_address() reads a GeoIP database of about 100 MB, which the agent does not load',
      ],
      [
        'extend d = datetime_diff(unit, _time, ago(1h))',
        'line 1, column 12: datetime_diff(): the date part must be a constant, one of year',
      ],
    ];
    for (const [query, error] of cases) {
      writeFileSync(
        config,
        `agent: { data_dir: ${join(dir, 'state')} }
service: { enabled: false }
sources: { file: { type: file, include: ["${dir}/*.log"] } }
transforms: { shape: { type: apl, inputs: [file], query: ${JSON.stringify(query)} } }
sinks: { out: { type: axiom, inputs: [shape], url: "http://127.0.0.1:9", token: t, dataset: d } }
`,
      );
      const r = spawnSync(process.execPath, ['dist/src/cli/main.js', 'validate', config], { encoding: 'utf8' });
      expect(r.status, r.stdout).not.toBe(0);
      expect(r.stderr).toContain('transforms.shape.query');
      expect(r.stderr).toContain(error);
      expect(r.stderr).not.toContain('    at ');
    }
  });
});
