/**
 * What `ferry health` makes of the health file: the newest file of the directories it is given, the
 * process behind it alive or not, a file left stale by a stuck process, and the problems a report names.
 */
import { existsSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEALTH_FILE, healthProblems, judgeHealth, startHealthFile } from '../../../src/cli/health-file.js';
import { tempDir } from '../../support/helpers.js';

const record = (health: object, o: { pid?: number; written?: Date } = {}) =>
  JSON.stringify({
    version: 1,
    pid: o.pid ?? process.pid,
    command: 'agent',
    every: 5,
    written: (o.written ?? new Date()).toISOString(),
    health,
  });

describe('ferry health', () => {
  it('judges the newest health file: ok and degraded pass, failing, stuck and gone do not', () => {
    const [a, b] = [tempDir(), tempDir()];
    expect(judgeHealth([a, b], false)).toMatchObject({ code: 1, line: expect.stringMatching(/^no health file in /) });

    writeFileSync(join(a, HEALTH_FILE), record({ status: 'degraded', sources: [{ name: 'app', files: 0 }] }));
    expect(judgeHealth([a, b], false)).toMatchObject({
      code: 0,
      line: `degraded: ferry agent (pid ${process.pid}): source app reads no file`,
    });
    // An older file in the other directory (a run of another mode) does not count.
    writeFileSync(join(b, HEALTH_FILE), record({ status: 'failing' }));
    utimesSync(join(b, HEALTH_FILE), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    expect(judgeHealth([a, b], false).code).toBe(0);

    const failing = {
      status: 'failing',
      sinks: [{ name: 'axiom', state: 'refused', lastError: '401 Unauthorized: invalid token' }],
    };
    writeFileSync(join(a, HEALTH_FILE), record(failing));
    expect(judgeHealth([a], false)).toMatchObject({
      code: 1,
      line: `failing: ferry agent (pid ${process.pid}): sink axiom refused: 401 Unauthorized: invalid token`,
    });
    // Alive is all a liveness probe asks: a refused token is not mended by a restart.
    expect(judgeHealth([a], true).code).toBe(0);

    writeFileSync(join(a, HEALTH_FILE), record({ status: 'ok' }, { written: new Date(Date.now() - 45_000) }));
    expect(judgeHealth([a], true)).toMatchObject({
      code: 1,
      line: `ferry agent (pid ${process.pid}) has not written its health for 45s: it is stuck`,
    });

    // A pid no process has (beyond pid_max).
    writeFileSync(join(a, HEALTH_FILE), record({ status: 'ok' }, { pid: 2 ** 22 + 1 }));
    expect(judgeHealth([a], true).line).toMatch(
      /^ferry agent \(pid 4194305\) is not running \(health last written 0s ago\)$/,
    );
  });

  it('names each problem of a report in one phrase', () => {
    expect(
      healthProblems({
        status: 'degraded',
        reload: { error: 'sinks.out.url: must be a URL' },
        sources: [{ name: 'app', files: 2, warnings: ['sources.app.include: /x.log: permission denied'] }],
        sinks: [{ name: 'out', state: 'retrying', lastError: 'connection refused' }],
        monitors: {
          failing: [{ name: 'errors', error: 'dataset not found' }],
          outbox: { mails: 2, reason: 'no SMTP server' },
        },
        records: [{ dataset: 'axiom-audit', failedRecords: 3 }],
        database: { reopening: true, lastFatal: { error: 'disk full' } },
      }),
    ).toEqual([
      'the last config reload failed: sinks.out.url: must be a URL',
      'sink out retrying: connection refused',
      'source app: sources.app.include: /x.log: permission denied',
      'monitor errors cannot run: dataset not found',
      '2 mail(s) in the outbox: no SMTP server',
      '3 record(s) not written to axiom-audit',
      'the database is reopening: disk full',
    ]);
  });

  it('the writer replaces the file whole, and removes it at the end only while it is its own', () => {
    const dir = tempDir();
    let status = 'ok';
    const remove = startHealthFile(dir, 'serve', () => ({ status }));
    expect(judgeHealth([dir], false)).toMatchObject({ code: 0, line: `ok: ferry serve (pid ${process.pid})` });
    // Another process wrote its report since: it stays.
    writeFileSync(join(dir, HEALTH_FILE), record({ status: 'ok' }, { pid: 1 }));
    remove();
    expect(existsSync(join(dir, HEALTH_FILE))).toBe(true);
    const again = startHealthFile(dir, 'serve', () => ({ status }));
    status = 'starting';
    again();
    expect(judgeHealth([dir], false).line).toMatch(/^no health file in /);
  });

  it('a health() that throws writes nothing and kills nothing', () => {
    const dir = tempDir();
    const remove = startHealthFile(dir, 'agent', () => {
      throw new Error('closed');
    });
    expect(existsSync(join(dir, HEALTH_FILE))).toBe(false);
    remove();
  });

  it('reads no file a symbolic link points at, and says nothing of what a file that is no report holds', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'secret'), 'secret-token-1234');
    symlinkSync(join(dir, 'secret'), join(dir, HEALTH_FILE));
    const linked = judgeHealth([dir], false);
    expect(linked.code).toBe(1);
    expect(linked.line).toBe(`${join(dir, HEALTH_FILE)}: a symbolic link (not followed)`);
    rmSync(join(dir, HEALTH_FILE));
    writeFileSync(join(dir, HEALTH_FILE), 'secret-token-1234');
    expect(judgeHealth([dir], false)).toEqual({ code: 1, line: `${join(dir, HEALTH_FILE)}: not a health report` });
    // Starting is alive, not ready; text that would drive a terminal is written out.
    writeFileSync(join(dir, HEALTH_FILE), record({ status: 'starting\u001b[2J' }));
    expect(judgeHealth([dir], false)).toMatchObject({
      code: 1,
      line: `starting\\u001b[2J: ferry agent (pid ${process.pid})`,
    });
    expect(judgeHealth([dir], true).code).toBe(0);
  });
});
