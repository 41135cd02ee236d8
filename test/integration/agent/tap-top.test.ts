/**
 * `ferry tap` and `ferry top` against a running agent: the events leaving a named component, filtered
 * and rate-limited, with what was skipped said; a tap that never reads does not slow the flow; wrong names
 * and filters refused in one line; taps answer loopback callers only and end with the agent; top shows
 * each component's rates while lines flow.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../support/agent-process.js';
import { tempDir, until } from '../../support/helpers.js';

const CLI = 'dist/src/cli/main.js';
const spawned: ChildProcess[] = [];
afterEach(async () => {
  for (const c of spawned.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  await stopAgentsAndReceivers();
});

/** A ferry command as a child process, with what it printed and how it ended. */
function ferry(args: string[]) {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  const r = { stdout: '', stderr: '', child, code: new Promise<number | null>((res) => child.on('exit', res)) };
  child.stdout.on('data', (d: Buffer) => (r.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (r.stderr += d.toString()));
  return r;
}

const lines = (from: number, n: number) =>
  Array.from(
    { length: n },
    (_, k) => `${JSON.stringify({ i: from + k, status: (from + k) % 3 === 0 ? 500 : 200 })}\n`,
  ).join('');

/** Waits until the agent counts `n` open taps (its metrics). */
async function untilTaps(api: string, n: number): Promise<void> {
  const end = Date.now() + 15_000;
  for (;;) {
    const m = /^ferry_taps (\d+)$/m.exec(await (await fetch(`${api}/metrics`)).text());
    if (Number(m?.[1]) === n) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${n} taps (${m?.[1]} open)`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function agentWithRoute(apiHost = '127.0.0.1') {
  const dir = tempDir('ferry-tap-');
  const log = join(dir, 'app.log');
  writeFileSync(log, '');
  const receiver = await startReceiver();
  writeFileSync(
    join(dir, 'agent.yaml'),
    `agent: { data_dir: ${join(dir, 'state')}, api: { listen: "${apiHost}:0" } }
service: { enabled: false }
sources: { file: { type: file, include: ["${log}"], start_at: beginning } }
transforms:
  parse: { type: parse, inputs: [file], parser: json }
  split: { type: route, inputs: [parse], routes: { errors: "status >= 500" } }
sinks:
  out: { type: axiom, inputs: [split.errors, split._unmatched], dataset: d, url: "${receiver.url}", token: t, batch: { timeout: 50ms } }
`,
  );
  const agent = startAgent(join(dir, 'agent.yaml'));
  const api = (await agent.waitLog('agent running')).api as string;
  return { dir, log, receiver, agent, api };
}

describe('ferry tap', () => {
  it('prints the events leaving a component, only those --where holds for, and stops at --limit', async () => {
    const { log, agent, api } = await agentWithRoute();
    const errors = ferry(['tap', 'split.errors', '--limit', '3', '--api', api]);
    const meta = ferry(['tap', '--where', 'i % 10 == 5', '--meta', '--limit', '2', '--api', api]);
    // The taps are open once the agent counts them: lines appended from then on pass them.
    await untilTaps(api, 2);
    appendFileSync(log, lines(0, 30));
    expect(await errors.code).toBe(0);
    expect(errors.stdout).toBe(
      `${JSON.stringify({ i: 0, status: 500 })}\n${JSON.stringify({ i: 3, status: 500 })}\n${JSON.stringify({ i: 6, status: 500 })}\n`,
    );
    expect(await meta.code).toBe(0);
    // No component named: every source and transform; the same event leaves the file, then parse.
    expect(
      meta.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { component: 'file', event: { i: 5, status: 200 } },
      { component: 'parse', event: { i: 5, status: 200 } },
    ]);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });

  it('skips what is past --rate and says so, and a tap that never reads does not slow the flow', async () => {
    const { log, receiver, agent, api } = await agentWithRoute();
    const limited = ferry(['tap', 'parse', '--rate', '5', '--api', api]);
    // A reader that takes its response and never reads it.
    const stalled = request(`${api}/tap?component=file`);
    stalled.on('response', (res) => res.pause());
    stalled.end();
    await untilTaps(api, 2);
    for (let k = 0; k < 10; k++) appendFileSync(log, lines(k * 2000, 2000));
    await until('every line delivered', () => receiver.events.length === 20_000, 30_000);
    await until('the skipped notice', () => limited.stderr.includes('skipped'), 5000);
    limited.child.kill('SIGINT');
    expect(await limited.code).toBe(0);
    const shown = limited.stdout.trim().split('\n').length;
    expect(shown).toBeGreaterThan(0);
    expect(shown).toBeLessThan(200);
    expect(limited.stderr).toMatch(/ferry tap: \d+ event\(s\) skipped/);
    stalled.destroy();
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });

  it('refuses unknown components, a route itself and a bad filter in one line; says an agent it cannot reach', async () => {
    const { agent, api } = await agentWithRoute();
    const cases: [string[], number, string][] = [
      [['nope'], 2, 'no source or transform named "nope" (there are: file, parse, split.errors, split._unmatched)'],
      [['split'], 2, 'split sends its events to named outputs: tap split.errors, split._unmatched'],
      [['--where', 'i >'], 2, 'where: line 1, column 4: expected an expression'],
      [['--rate', '0'], 2, 'rate must be a whole number from 1 to 10000'],
    ];
    for (const [args, code, message] of cases) {
      const r = ferry(['tap', ...args, '--api', api]);
      expect(await r.code, r.stderr).toBe(code);
      expect(r.stderr).toContain(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    // Eight taps at once at most.
    const open = Array.from({ length: 8 }, () => ferry(['tap', '--api', api]));
    await untilTaps(api, 8);
    const ninth = ferry(['tap', '--api', api]);
    expect(await ninth.code).toBe(1);
    expect(ninth.stderr).toContain('8 taps are open already');
    // The agent stopping ends its taps, which say so; it stops at once all the same.
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    for (const t of open) {
      expect(await t.code).toBe(1);
      expect(t.stderr).toContain('the agent ended the tap');
    }
    const gone = ferry(['tap', '--api', api]);
    expect(await gone.code).toBe(1);
    expect(gone.stderr).toContain("cannot reach the agent's API");
  });

  it('answers a request target that is no URL with 400, a tap asked for by another host name with 403, and exits 1 when the agent is killed', async () => {
    const { agent, api } = await agentWithRoute();
    const { hostname, port } = new URL(api);
    const raw = (target: string, host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: hostname, port, path: target, headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
    // node's parser lets `//[` through; the agent answers it and stays up.
    expect(await raw('//[', `127.0.0.1:${port}`)).toBe(400);
    expect(await raw('/health', `127.0.0.1:${port}`)).toBe(200);
    // A page whose name was made to resolve to 127.0.0.1 sends its own name as Host.
    expect(await raw('/tap', `evil.example:${port}`)).toBe(403);
    const tap = ferry(['tap', '--api', api]);
    await untilTaps(api, 1);
    agent.child.kill('SIGKILL');
    expect(await tap.code).toBe(1);
    expect(tap.stderr).toContain('the agent ended the tap');
    expect(tap.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('answers callers on this host only, whatever address the API listens on', async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    // A host with no address but loopback has no caller from elsewhere to refuse.
    if (!external) return;
    const { agent, api } = await agentWithRoute('0.0.0.0');
    const port = new URL(api).port;
    const far = await fetch(`http://${external}:${port}/tap`);
    expect(far.status).toBe(403);
    expect(await far.json()).toEqual({ code: 403, message: 'taps show events: they answer callers on this host only' });
    // The rest of the API is the same as ever.
    expect((await fetch(`http://${external}:${port}/health`)).status).toBe(200);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });
});

describe('ferry top', () => {
  it("shows each component's rates, queue and state while lines flow, as plain tables when not a terminal", async () => {
    const { log, agent, api } = await agentWithRoute();
    let writing = true;
    let i = 0;
    const writer = (async () => {
      while (writing) {
        appendFileSync(log, lines(i, 200));
        i += 200;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const top = ferry(['top', '--count', '2', '--interval', '500ms', '--api', api]);
    expect(await top.code, top.stderr).toBe(0);
    writing = false;
    await writer;
    const tables = top.stdout.split('\n\n').filter(Boolean);
    expect(tables).toHaveLength(2);
    const last = tables[1]!.split('\n');
    expect(last[0]).toMatch(/^ferry top: http:\/\/127\.0\.0\.1:\d+, \d{4}-.*, rates over 0\.\d s$/);
    expect(last[1]).toMatch(/^component\s+kind\s+type\s+in\/s\s+out\/s\s+dropped\/s\s+errors\s+queue\s+lag\s+state$/);
    const row = (name: string) =>
      last
        .find((l) => l.startsWith(`${name} `))!
        .trim()
        .split(/\s+/);
    // file: lines in and out per second; parse: events; the sink: its state.
    expect(Number(row('file')[3])).toBeGreaterThan(100);
    expect(Number(row('parse')[4])).toBeGreaterThan(100);
    expect(row('out')).toContain('ok');
    expect(top.stdout).not.toContain('\x1b[');
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });
});
