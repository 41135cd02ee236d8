/**
 * The relay with the real binary and Axiom's official clients as the applications: `@axiomhq/js`,
 * `@axiomhq/pino` and `@axiomhq/winston` send to the agent while its receiver is down; they get their
 * 200s, the agent is killed with SIGKILL, started again, and once the receiver is back every event arrives
 * in the dataset its application named, with the request's time parameters.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, startReceiver, stopAgentsAndReceivers, trackChild } from '../../../support/agent-process.js';
import { freePort, tempDir } from '../../../support/helpers.js';

const TOKEN = 'app-token-1234';
const APP = 'test/support/relay-app.mjs';

afterEach(stopAgentsAndReceivers);

/** Runs an application to its end; resolves with what its client reported, and its stderr. */
function runApp(
  kind: string,
  url: string,
  dataset: string,
  count: number,
): Promise<{ kind: string; ingested: number; errors: string[]; stderr: string }> {
  const child = spawn(process.execPath, [APP, kind, url, TOKEN, dataset, String(count), kind], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(child);
  let out = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) =>
      code === 0
        ? resolve({ ...(JSON.parse(out) as { kind: string; ingested: number; errors: string[] }), stderr })
        : reject(new Error(`${kind} app exited with ${code}: ${stderr}`)),
    ),
  );
}

describe('applications logging through the relay', () => {
  it('get 200s while the receiver is down, and every event arrives after a kill -9 of the agent', async () => {
    const receiver = await startReceiver();
    await receiver.down();
    const port = await freePort();
    const dir = tempDir();
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `service: { enabled: false }
agent:
  data_dir: ${dir}/data
  api:
    listen: 127.0.0.1:0
sources:
  apps:
    type: http
    address: 127.0.0.1:${port}
    tokens: ["${TOKEN}"]
sinks:
  out:
    type: axiom
    inputs: [apps]
    url: ${receiver.url}
    token: receiver-token
    dataset: fallback
    retry:
      initial_backoff: 100ms
      max_backoff: 500ms
`,
    );
    const agent = startAgent(config);
    await agent.waitLog('agent running');
    const relay = `http://127.0.0.1:${port}`;
    const apps = await Promise.all([
      runApp('js', relay, 'app-js', 200),
      runApp('pino', relay, 'app-pino', 200),
      runApp('winston', relay, 'app-winston', 200),
    ]);
    for (const app of apps) {
      expect(app.errors, app.kind).toEqual([]);
      expect(app.stderr, app.kind).not.toMatch(/failed|error/i);
      expect(app.ingested, app.kind).toBe(200);
    }
    expect(receiver.requests).toBe(0);

    agent.child.kill('SIGKILL');
    await agent.exited;
    const again = startAgent(config);
    await again.waitLog('agent running');
    await receiver.up();
    const deadline = Date.now() + 30_000;
    while (receiver.seen.size < 600 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const kind of ['js', 'pino', 'winston']) {
      const ids = Array.from({ length: 200 }, (_, i) => `${kind}-${i}`);
      expect(
        ids.filter((id) => !receiver.seen.has(id)),
        kind,
      ).toEqual([]);
    }
    // Each application's events went to its dataset, and only there.
    for (const b of receiver.batches) {
      const kinds = new Set(b.events.map((e) => String(e.id).split('-')[0]));
      expect([...kinds].map((k) => `app-${k}`)).toEqual([b.dataset]);
      // The js client's time parameters went with its events; the others sent none.
      expect(b.query).toBe(b.dataset === 'app-js' ? 'timestamp-field=ts&timestamp-format=unixms' : '');
    }
    const pinoEvent = receiver.events.find((e) => e.id === 'pino-7')!;
    expect(pinoEvent).toMatchObject({ level: 'info', msg: 'message 7' });
    expect(typeof pinoEvent._time).toBe('number');
    expect(receiver.events.find((e) => e.id === 'winston-7')).toMatchObject({ level: 'info', message: 'message 7' });
  }, 120_000);
});
