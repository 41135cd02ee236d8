/**
 * A sink's queue that cannot record deliveries (its disk): what a user of the running agent sees. Data goes
 * on flowing; the log says why once; /health is degraded with the cause and the metrics count the
 * failures; once a record succeeds, the log says so and /health is ok again.
 */
import { appendFileSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { tempDir, until } from '../../../support/helpers.js';

afterEach(stopAgentsAndReceivers);

const lines = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `${JSON.stringify({ id: from + i })}\n`).join('');

interface Health {
  status: string;
  sinks: { name: string; state: string; queueError?: string }[];
}

describe('a queue that cannot record deliveries', () => {
  it('keeps data flowing, is degraded in /health and counted in /metrics until a record succeeds', async () => {
    const dir = tempDir('ferry-ackfail-');
    const log = join(dir, 'app.log');
    writeFileSync(log, lines(0, 5));
    const receiver = await startReceiver();
    writeFileSync(
      join(dir, 'agent.yaml'),
      `log: { level: info }
service: { enabled: false }
agent: { data_dir: ${join(dir, 'state')}, api: { listen: 127.0.0.1:0 } }
sources:
  app: { type: file, include: ["${log}"], poll_interval: 50ms, start_at: beginning }
sinks:
  out: { type: axiom, inputs: [app], url: ${receiver.url}, token: t, dataset: d, batch: { timeout: 50ms } }
`,
    );
    const agent = startAgent(join(dir, 'agent.yaml'));
    const api = (await agent.waitLog('agent running')).api as string;
    const health = async () => (await (await fetch(`${api}/health`)).json()) as Health;
    const metric = async () =>
      Number(
        /ferry_queue_ack_failures_total\{sink="out"\} (\d+)/.exec(await (await fetch(`${api}/metrics`)).text())?.[1],
      );
    await until('the first lines delivered', () => receiver.lines.length === 5);
    expect(await metric()).toBe(0);

    // The acknowledgement can no longer be written: a directory stands where its file is written first.
    const blocker = join(dir, 'state', 'queues', 'out', 'ack.json.tmp');
    mkdirSync(blocker);
    for (let batch = 0; batch < 3; batch++) {
      appendFileSync(log, lines(5 + batch * 5, 10 + batch * 5));
      await until('the next lines delivered', () => receiver.lines.length === 10 + batch * 5);
    }
    await until('the failure said', () => agent.logs.some((l) => String(l.msg).includes('could not be recorded')));
    const said = agent.logs.find((l) => String(l.msg).includes('could not be recorded'));
    expect(said).toMatchObject({ level: 'error', sink: 'out' });
    expect(said?.msg).toBe(
      `sink out: delivered batches could not be recorded in its queue at ${join(dir, 'state', 'queues', 'out')} (EISDIR: illegal operation on a directory, open '${blocker}'); they are sent again after a restart`,
    );
    await until('/health degraded', async () => (await health()).status === 'degraded');
    expect((await health()).sinks[0]).toMatchObject({
      name: 'out',
      state: 'ok',
      queueError: expect.stringMatching(/EISDIR/),
    });
    expect(await metric()).toBeGreaterThanOrEqual(1);
    // Said once while it lasts.
    expect(agent.logs.filter((l) => String(l.msg).includes('could not be recorded'))).toHaveLength(1);

    rmdirSync(blocker);
    appendFileSync(log, lines(20, 25));
    await until('the last lines delivered', () => receiver.lines.length === 25);
    await agent.waitLog('sink out: its queue records deliveries again');
    await until('/health ok again', async () => (await health()).status === 'ok');
    expect((await health()).sinks[0]).not.toHaveProperty('queueError');
    expect(receiver.lines.map((l) => (JSON.parse(l) as { id: number }).id)).toEqual(
      Array.from({ length: 25 }, (_, i) => i),
    );
  });
});
