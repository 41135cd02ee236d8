/**
 * The journald source against real journal files (written by systemd-journal-remote, read by journalctl):
 * the journal's field names, bytes as text, the filters, following, the cursor checkpoint across restarts
 * and kill -9, a vacuumed cursor, and a journalctl that is not there.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { journalctlArgs, JournaldSource, type JournaldSettings } from '../../../../src/agent/sources/journald.js';
import type { SourceLine } from '../../../../src/agent/sources/source.js';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { tempDir, until } from '../../../support/helpers.js';
import { writeJournal } from '../../../support/journal.js';

const settings = (journalDir: string, extra: Partial<JournaldSettings> = {}): JournaldSettings => ({
  units: [],
  identifiers: [],
  matches: [],
  startAt: 'beginning',
  journalDir,
  journalctl: 'journalctl',
  maxLineBytes: 1024 * 1024,
  checkpointIntervalMs: 100,
  ...extra,
});

interface Run {
  source: JournaldSource;
  lines: SourceLine[];
  warnings: string[];
  infos: { msg: string; fields: Record<string, unknown> }[];
  events(): Record<string, unknown>[];
}

const running: JournaldSource[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
  await stopAgentsAndReceivers();
});

async function run(stateDir: string, s: JournaldSettings): Promise<Run> {
  const warnings: string[] = [];
  const infos: Run['infos'] = [];
  const source = new JournaldSource('j', s, stateDir, {
    info: (o, msg) => infos.push({ msg, fields: o as Record<string, unknown> }),
    warn: (_o, m) => warnings.push(m),
  });
  running.push(source);
  const lines: SourceLine[] = [];
  await source.start(async (l) => void lines.push(l));
  return {
    source,
    lines,
    warnings,
    infos,
    events: () => lines.map((l) => JSON.parse(l.text) as Record<string, unknown>),
  };
}

const entry = (i: number, extra: Record<string, string | Buffer | string[]> = {}) => ({
  MESSAGE: `line ${i}`,
  PRIORITY: String(i % 8),
  _SYSTEMD_UNIT: i % 2 ? 'nginx.service' : 'cron.service',
  SYSLOG_IDENTIFIER: i % 3 ? 'app' : 'sshd',
  _HOSTNAME: 'web-1',
  _PID: String(100 + i),
  ...extra,
});

/** The number in the MESSAGE of the entry a checkpoint file names (-1 without one). */
function checkpointed(journal: string, file: string): number {
  if (!existsSync(file)) return -1;
  const { cursor } = JSON.parse(readFileSync(file, 'utf8')) as { cursor: string };
  const r = spawnSync('journalctl', [`--directory=${journal}`, `--cursor=${cursor}`, '--lines=1', '--output=json'], {
    encoding: 'utf8',
  });
  const first = r.stdout.split('\n')[0];
  return first ? Number(/^line (\d+)$/.exec((JSON.parse(first) as { MESSAGE: string }).MESSAGE)?.[1] ?? -1) : -1;
}

describe('the journald source', () => {
  it("ships entries with the journal's field names, bytes as text, and _time from __REALTIME_TIMESTAMP", async () => {
    const dir = tempDir('ferry-journal-');
    writeJournal(dir, [
      entry(0),
      entry(1, { MESSAGE: Buffer.from([0x68, 0x69, 0x0a, 0x1b, 0x5b, 0x31, 0x6d, 0xe2, 0x9c, 0x93]) }),
      entry(2, { TAG: ['a', 'b'] }),
    ]);
    const r = await run(tempDir(), settings(dir));
    await until('3 entries', () => r.lines.length === 3);
    const [e0, e1, e2] = r.events();
    expect(e0).toMatchObject({
      MESSAGE: 'line 0',
      PRIORITY: '0',
      _SYSTEMD_UNIT: 'cron.service',
      SYSLOG_IDENTIFIER: 'sshd',
      _HOSTNAME: 'web-1',
      _PID: '100',
    });
    expect(e0!._time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(Date.parse(e0!._time as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(e0).not.toHaveProperty('__CURSOR');
    expect(e0).not.toHaveProperty('__REALTIME_TIMESTAMP');
    // journalctl writes a value with control characters as bytes; it ships as text.
    expect(e1!.MESSAGE).toBe('hi\n\u001b[1m✓');
    expect(e2!.TAG).toEqual(['a', 'b']);
    expect(r.source.counters.linesIn).toBe(3);
    expect(r.lines.map((l) => l.offset)).toEqual([1, 2, 3]);
  });

  it('reads only the units, identifiers, priorities and matches it is given', async () => {
    const dir = tempDir('ferry-journal-');
    writeJournal(
      dir,
      Array.from({ length: 24 }, (_, i) => entry(i)),
    );
    const messages = async (extra: Partial<JournaldSettings>, expected: number[]) => {
      const r = await run(tempDir(), settings(dir, extra));
      await until(`${expected.length} entries for ${JSON.stringify(extra)}`, () => r.lines.length >= expected.length);
      await new Promise((res) => setTimeout(res, 300)); // nothing more comes
      expect(
        r.events().map((e) => e.MESSAGE),
        JSON.stringify(extra),
      ).toEqual(expected.map((i) => `line ${i}`));
    };
    const all = Array.from({ length: 24 }, (_, i) => i);
    await messages(
      { units: ['nginx.service'] },
      all.filter((i) => i % 2),
    );
    await messages(
      { identifiers: ['sshd'] },
      all.filter((i) => i % 3 === 0),
    );
    await messages(
      { priority: 'crit' },
      all.filter((i) => i % 8 <= 2),
    );
    await messages({ matches: ['_PID=103', '_PID=110'] }, [3, 10]);
    // Different kinds of filter must all hold.
    await messages(
      { units: ['nginx.service'], priority: 'err' },
      all.filter((i) => i % 2 && i % 8 <= 3),
    );
  });

  it('says once that it caught up with the entries its filters matched at the start, with how many it read', async () => {
    const dir = tempDir('ferry-journal-');
    writeJournal(
      dir,
      Array.from({ length: 40 }, (_, i) => entry(i)),
    );
    const state = tempDir();
    const r = await run(state, settings(dir, { units: ['nginx.service'] }));
    await until('the backlog read', () => r.infos.some((i) => i.msg === 'caught up'));
    // Said when the last matching entry was read, not before.
    expect(r.lines).toHaveLength(20);
    const said = r.infos.filter((i) => i.msg === 'caught up');
    expect(said).toHaveLength(1);
    expect(said[0]!.fields).toMatchObject({ source: 'j', lines: 20 });
    expect(said[0]!.fields.bytes).toBe(r.source.counters.bytesIn);
    // Entries that come later are following, not catching up.
    writeJournal(dir, [entry(41), entry(43)]);
    await until('the new entries', () => r.lines.length === 22);
    expect(r.infos.filter((i) => i.msg === 'caught up')).toHaveLength(1);
    // A restart with nothing after its checkpoint has nothing to catch up with.
    r.lines[21]!.stream.acknowledge(22, 0);
    await r.source.stop();
    await r.source.close();
    const again = await run(state, settings(dir, { units: ['nginx.service'] }));
    writeJournal(dir, [entry(45)]);
    await until('the entry after the restart', () => again.lines.length === 1);
    expect(again.infos.filter((i) => i.msg === 'caught up')).toEqual([]);
    // Entries written while it was stopped are a backlog again: those after the checkpoint, and only them.
    again.lines[0]!.stream.acknowledge(1, 0);
    await again.source.stop();
    await again.source.close();
    writeJournal(dir, [entry(46), entry(47), entry(48), entry(49)]);
    const third = await run(state, settings(dir, { units: ['nginx.service'] }));
    await until('the backlog after the checkpoint', () => third.infos.some((i) => i.msg === 'caught up'));
    expect(third.events().map((e) => e.MESSAGE)).toEqual(['line 47', 'line 49']);
    expect(third.infos.find((i) => i.msg === 'caught up')!.fields).toMatchObject({ lines: 2 });
  });

  it('with start_at end reads only what comes after it started, and follows the journal as it grows', async () => {
    const dir = tempDir('ferry-journal-');
    writeJournal(dir, [entry(0), entry(1)]);
    const r = await run(tempDir(), settings(dir, { startAt: 'end' }));
    // The end as of the start: entries written at once after it are read, however late journalctl looks.
    writeJournal(dir, [entry(2), entry(3)]);
    await until('2 new entries', () => r.lines.length === 2);
    writeJournal(dir, [entry(4)]);
    await until('the next one', () => r.lines.length === 3);
    expect(r.events().map((e) => e.MESSAGE)).toEqual(['line 2', 'line 3', 'line 4']);
  });

  it('checkpoints the cursor of the last durable entry: a restart goes on after it, what was not durable comes again', async () => {
    const dir = tempDir('ferry-journal-');
    const state = tempDir();
    writeJournal(
      dir,
      Array.from({ length: 10 }, (_, i) => entry(i)),
    );
    const first = await run(state, settings(dir));
    await until('10 entries', () => first.lines.length === 10);
    // Entries 1–6 are durable downstream; 7–10 are not yet.
    first.lines[5]!.stream.acknowledge(6, 0);
    await first.source.stop();
    await first.source.close();
    writeJournal(dir, [entry(10)]);
    const second = await run(state, settings(dir, { startAt: 'end' }));
    await until('the 5 entries after the checkpoint', () => second.lines.length === 5);
    expect(second.events().map((e) => e.MESSAGE)).toEqual(['line 6', 'line 7', 'line 8', 'line 9', 'line 10']);
  });

  it('ships fields past 4096 bytes whole, and misses nothing when the filters change or it stops before any entry', async () => {
    const dir = tempDir('ferry-journal-');
    const state = tempDir();
    writeJournal(dir, [entry(0), entry(1)]);
    // start_at end, stopped before anything new came: the end of the first start is kept.
    const first = await run(state, settings(dir, { startAt: 'end' }));
    await first.source.stop();
    await first.source.close();
    writeJournal(dir, [entry(2, { MESSAGE: 'x'.repeat(5000) }), entry(3)]);
    const second = await run(state, settings(dir, { startAt: 'end' }));
    await until('2 entries written while it was stopped', () => second.lines.length === 2);
    expect(second.events()[0]!.MESSAGE).toBe('x'.repeat(5000));
    second.lines[0]!.stream.acknowledge(1, 0); // entry 2 (a cron one) is durable, entry 3 is not
    await second.source.stop();
    await second.source.close();
    // The checkpoint's entry (2, cron) does not match the new filter: the next nginx entry must not be skipped.
    writeJournal(dir, [entry(5), entry(7)]);
    const third = await run(state, settings(dir, { units: ['nginx.service'] }));
    await until('the nginx entries after the checkpoint', () => third.lines.length === 3);
    expect(third.events().map((e) => e.MESSAGE)).toEqual(['line 3', 'line 5', 'line 7']);
  });

  it('reads from the oldest entry, with a warning, when the checkpoint cursor is no longer in the journal', async () => {
    const dir = tempDir('ferry-journal-');
    const state = tempDir();
    writeJournal(dir, [entry(0), entry(1)]);
    mkdirSync(join(state, 'checkpoints'), { recursive: true });
    // A cursor of entries vacuumed away: another sequence number id, and an old time.
    writeFileSync(
      join(state, 'checkpoints', 'j.json'),
      JSON.stringify({
        version: 1,
        cursor: 's=00000000000000000000000000000001;i=7;b=0123456789abcdef0123456789abcdef;m=1;t=1000;x=2',
      }),
    );
    const r = await run(state, settings(dir, { startAt: 'end' }));
    await until('2 entries', () => r.lines.length === 2);
    expect(r.events().map((e) => e.MESSAGE)).toEqual(['line 0', 'line 1']);
    expect(r.warnings.join('\n')).toContain('no longer in the journal');
  });

  it('says in /health why nothing is read when journalctl cannot be run, and which arguments it is given', async () => {
    const r = await run(tempDir(), settings(tempDir(), { journalctl: '/nonexistent/journalctl' }));
    await until('a warning', () => r.source.status().warnings.length > 0);
    expect(r.source.status().warnings[0]).toContain('journalctl not found (/nonexistent/journalctl)');
    expect(r.source.status().degraded).toBe(true);
    // Through the agent: /health is degraded, naming the reason under the source.
    const dir = tempDir('ferry-journal-');
    const receiver = await startReceiver();
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `agent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }
service: { enabled: false }
sources:
  j: { type: journald, journalctl_path: /nonexistent/journalctl }
sinks:
  out: { type: axiom, inputs: [j], dataset: d, url: "${receiver.url}", token: t }
`,
    );
    const agent = startAgent(config);
    const api = (await agent.waitLog('agent running')).api as string;
    let health: { status: string; sources: { name: string; warnings?: string[]; degraded?: boolean }[] };
    for (const end = Date.now() + 15_000; ;) {
      health = (await (await fetch(`${api}/health`)).json()) as typeof health;
      if (health.status === 'degraded' || Date.now() > end) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(health.status).toBe('degraded');
    expect(health.sources[0]).toMatchObject({ name: 'j', degraded: true });
    expect(health.sources[0]!.warnings![0]).toContain('journalctl not found');
    agent.child.kill('SIGTERM');
    await agent.exited;
    expect(
      journalctlArgs(
        settings('/j', { units: ['a.service'], identifiers: ['sshd'], priority: 'info', matches: ['_PID=1'] }),
        { after: 'c' },
      ),
    ).toEqual([
      '--output=json',
      '--all',
      '--follow',
      '--no-pager',
      '--quiet',
      '--directory=/j',
      '--no-tail',
      '--cursor=c',
      '--unit=a.service',
      '--identifier=sshd',
      '--priority=info',
      '_PID=1',
    ]);
  });

  it('through the agent: every entry arrives across a kill -9, and a clean restart repeats nothing', async () => {
    const dir = tempDir('ferry-journal-');
    const journal = join(dir, 'journal');
    mkdirSync(journal);
    const receiver = await startReceiver();
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `agent: { data_dir: ${join(dir, 'state')}, api: { enabled: false } }
service: { enabled: false }
sources:
  j: { type: journald, journal_dir: ${journal}, start_at: beginning, checkpoint_interval: 100ms }
sinks:
  out: { type: axiom, inputs: [j], dataset: d, url: "${receiver.url}", token: t, batch: { timeout: 50ms, max_events: 50 } }
`,
    );
    const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => entry(from + i));
    writeJournal(journal, ids(0, 300));
    let agent = startAgent(config);
    await agent.waitLog('source started: reading the journal');
    writeJournal(journal, ids(300, 300));
    // Killed once a cursor past the first entries is checkpointed (however loaded the machine): what
    // follows it may come twice, what precedes it must not.
    const checkpoint = join(dir, 'state', 'checkpoints', 'j.json');
    await until('a checkpoint past the first 300 entries', () => checkpointed(journal, checkpoint) >= 299, 30_000);
    agent.child.kill('SIGKILL');
    await agent.exited;
    writeJournal(journal, ids(600, 200));
    agent = startAgent(config);
    await until('800 entries', () => receiver.seen.size === 800, 30_000);
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
    const before = receiver.events.length;
    writeJournal(journal, ids(800, 10));
    agent = startAgent(config);
    await until('810 entries', () => receiver.seen.size === 810, 30_000);
    await new Promise((r) => setTimeout(r, 300));
    // After a clean stop only the new entries come; after kill -9, what was not yet checkpointed may repeat,
    // and so may batches of the sink's queue whose delivery was not yet recorded.
    expect(receiver.events.length - before).toBe(10);
    agent.child.kill('SIGTERM');
    await agent.exited;
  });
});
