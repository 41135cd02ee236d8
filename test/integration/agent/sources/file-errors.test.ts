/**
 * What the file source says about a file it finds and cannot read (no permission, a directory named as a
 * file): one warning with the cause in words and no stack, a counter by reason, and /health degraded naming
 * the path until the file can be read, when its lines are read whole; and the line that says it caught up.
 * As root, permissions do not stop a read: the agent runs without the capabilities that let root pass them.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { tempDir, until } from '../../../support/helpers.js';

afterEach(stopAgentsAndReceivers);

/** Root reads any file: drop the capabilities that let it, so a mode of 000 means what it says. */
const asUser = process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-dac_override,-dac_read_search'] : [];

const line = (i: number) => `${JSON.stringify({ id: i, msg: `line ${i}` })}\n`;

describe('a file the source cannot read', () => {
  it('is said once with its cause, counted, and in /health until it can be read; then read whole', async () => {
    const dir = tempDir('ferry-file-errors-');
    const logs = join(dir, 'logs');
    mkdirSync(join(logs, 'not-a-file.log'), { recursive: true });
    writeFileSync(join(logs, 'ok.log'), line(1) + line(2) + line(3));
    writeFileSync(join(logs, 'secret.log'), line(10) + line(11));
    chmodSync(join(logs, 'secret.log'), 0o000);
    const receiver = await startReceiver();
    writeFileSync(
      join(dir, 'agent.yaml'),
      `log: { level: info }
service: { enabled: false }
agent: { data_dir: ${join(dir, 'state')}, api: { listen: 127.0.0.1:0 } }
sources:
  app: { type: file, include: ["${logs}/*.log", "${logs}/not-a-file.log"], poll_interval: 50ms, start_at: beginning }
sinks:
  out: { type: axiom, inputs: [app], url: ${receiver.url}, token: t, dataset: d, batch: { timeout: 50ms } }
`,
    );
    const agent = startAgent(join(dir, 'agent.yaml'), {}, asUser);
    const api = (await agent.waitLog('agent running')).api as string;
    const caughtUp = await agent.waitLog('caught up');
    expect(caughtUp).toMatchObject({ source: 'app', path: join(logs, 'ok.log'), lines: 3, bytes: 3 * line(1).length });
    const denied = await agent.waitLog('cannot read file: permission denied');
    expect(denied).toMatchObject({
      level: 'warn',
      source: 'app',
      path: join(logs, 'secret.log'),
      reason: 'permission_denied',
    });
    expect(denied).not.toHaveProperty('err');
    const health = async () =>
      (await (await fetch(`${api}/health`)).json()) as { status: string; sources: { warnings?: string[] }[] };
    await until('both problems in /health', async () => ((await health()).sources[0]?.warnings ?? []).length === 2);
    const h = await health();
    expect(h.status).toBe('degraded');
    expect(h.sources[0]!.warnings!.sort()).toEqual([
      `sources.app.include: ${join(logs, 'not-a-file.log')}: a directory, not a file`,
      `sources.app.include: ${join(logs, 'secret.log')}: permission denied`,
    ]);
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metrics).toContain('ferry_source_file_errors_total{source="app",reason="permission_denied"} 1');
    expect(metrics).toContain('ferry_source_file_errors_total{source="app",reason="not_a_file"} 1');
    expect(metrics).toContain('ferry_source_unreadable_files{source="app"} 2');
    // Said once, not every round.
    await new Promise((r) => setTimeout(r, 300));
    expect(agent.logs.filter((l) => l.msg === 'cannot read file: permission denied')).toHaveLength(1);
    expect(agent.stderr()).not.toMatch(/\n\s+at /);

    chmodSync(join(logs, 'secret.log'), 0o644);
    await agent.waitLog('file readable now');
    await until('every line delivered', () => receiver.seen.size === 5);
    await until('one problem left', async () => ((await health()).sources[0]?.warnings ?? []).length === 1);
    expect((await health()).sources[0]!.warnings).toEqual([
      `sources.app.include: ${join(logs, 'not-a-file.log')}: a directory, not a file`,
    ]);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    // The last line says what it did.
    expect(agent.logs.find((l) => l.msg === 'stopped')).toMatchObject({
      delivered: true,
      'in.app': 5,
      'out.out': 5,
      'queued.out': 0,
    });
  });
});
