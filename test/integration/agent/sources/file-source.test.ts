import {
  appendFileSync,
  closeSync,
  copyFileSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSource, type FileSourceOptions } from '../../../../src/agent/sources/file/file-source.js';
import type { SourceLine } from '../../../../src/agent/sources/source.js';
import { tempDir } from '../../../support/helpers.js';

interface Harness {
  source: FileSource;
  lines: SourceLine[];
  texts(): string[];
  stop(): Promise<void>;
}

const running: Harness[] = [];
afterEach(async () => {
  for (const h of running.splice(0)) await h.stop().catch(() => undefined);
});

/** A file source whose lines are acknowledged as soon as they arrive (as if queued at once), unless `ack` is false. */
async function tail(dir: string, o: Partial<FileSourceOptions> = {}, ack = true): Promise<Harness> {
  const lines: SourceLine[] = [];
  const errors: unknown[] = [];
  const source = new FileSource('files', {
    include: [join(dir, 'logs', '*.log')],
    exclude: [],
    startAt: 'beginning',
    pollIntervalMs: 25,
    checkpointIntervalMs: 50,
    stateDir: join(dir, 'state'),
    maxLineBytes: 1024,
    chunkBytes: 64 * 1024,
    rotateWaitMs: 300,
    fingerprintBytes: 64,
    onError: (e) => errors.push(e),
    ...o,
  });
  await source.start(async (l) => {
    lines.push(l);
    if (ack) l.stream.acknowledge(l.offset, l.generation);
  });
  let stopped = false;
  const h: Harness = {
    source,
    lines,
    texts: () => lines.map((l) => l.text),
    async stop() {
      if (stopped) return;
      stopped = true;
      await source.stop();
      await source.close();
      expect(errors).toEqual([]);
    },
  };
  running.push(h);
  return h;
}

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function numbered(prefix: string, from: number, n: number): string {
  return Array.from({ length: n }, (_, i) => `${prefix} ${from + i}\n`).join('');
}

function setup(): { dir: string; logs: string } {
  const dir = tempDir('ferry-files-');
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  return { dir, logs };
}

describe('file source', () => {
  it('hands undecoded lines (passthrough) intact though every read reuses one buffer: across chunks, long lines, two files', async () => {
    const dir = tempDir('ferry-src-');
    mkdirSync(join(dir, 'logs'));
    const expected = new Map<string, string[]>();
    for (const name of ['a', 'b']) {
      const lines = Array.from({ length: 400 }, (_, i) => `{"${name}":${i},"pad":"${'x'.repeat((i * 37) % 2500)}"}`);
      expected.set(name, lines);
      writeFileSync(join(dir, 'logs', `${name}.log`), lines.map((l) => `${l}\n`).join(''));
    }
    const got: string[] = [];
    const source = new FileSource('files', {
      include: [join(dir, 'logs', '*.log')],
      exclude: [],
      startAt: 'beginning',
      pollIntervalMs: 25,
      checkpointIntervalMs: 50,
      stateDir: join(dir, 'state'),
      maxLineBytes: 4096,
      chunkBytes: 1000,
      rotateWaitMs: 300,
      fingerprintBytes: 64,
      decode: false,
      onError: (e) => {
        throw e;
      },
    });
    let n = 0;
    let runs = 0;
    // A run holds several lines (nothing reads them: they go on as they lie in the file).
    const take = (l: SourceLine) => {
      const lines = l.raw!.toString().split('\n');
      expect(lines).toHaveLength(l.lines ?? 1);
      if (lines.length > 1) runs++;
      got.push(...lines);
    };
    await source.start((l) => {
      // As a sink does: copy the bytes in now, or (every third line) after an await the source waits for.
      if (++n % 3 !== 0) {
        take(l);
        return undefined;
      }
      return new Promise<void>((r) =>
        setImmediate(() => {
          take(l);
          r();
        }),
      );
    });
    running.push({
      source,
      lines: [],
      texts: () => [],
      stop: async () => {
        await source.stop();
        await source.close();
      },
    });
    await until('every line', () => got.length === 800);
    for (const [name, lines] of expected) expect(got.filter((l) => l.startsWith(`{"${name}"`))).toEqual(lines);
    expect(runs).toBeGreaterThan(0);
  });

  it('reads files there at start, files created later, and what is appended; exclude globs keep files out', async () => {
    const { dir, logs } = setup();
    writeFileSync(join(logs, 'a.log'), numbered('a', 0, 3));
    writeFileSync(join(logs, 'skip.log'), 'never\n');
    writeFileSync(join(logs, 'notes.txt'), 'not a log\n');
    writeFileSync(join(logs, 'c.log'), 'never c\n');
    // A name pattern, and a path pattern with ** (each matched as what it is).
    const h = await tail(dir, { exclude: ['skip.*', join(logs, '**', 'c.log')] });
    await until('a.log', () => h.lines.length === 3);
    writeFileSync(join(logs, 'b.log'), numbered('b', 0, 2));
    appendFileSync(join(logs, 'a.log'), numbered('a', 3, 2));
    await until('b.log and the appended lines', () => h.lines.length === 7);
    expect(h.texts().filter((t) => t.startsWith('a'))).toEqual(['a 0', 'a 1', 'a 2', 'a 3', 'a 4']);
    expect(h.texts().filter((t) => t.startsWith('b'))).toEqual(['b 0', 'b 1']);
    expect(h.lines.find((l) => l.text === 'b 1')!.stream.path).toBe(join(logs, 'b.log'));
    await new Promise((r) => setTimeout(r, 200));
    expect(h.texts()).not.toContain('never');
    expect(h.texts()).not.toContain('never c');
    expect(h.texts()).not.toContain('not a log');
  });

  it('picks up files in a directory created after the start', async () => {
    const dir = tempDir('ferry-files-');
    const h = await tail(dir); // logs/ does not exist yet
    mkdirSync(join(dir, 'logs'));
    writeFileSync(join(dir, 'logs', 'late.log'), 'late line\n');
    await until('the late file', () => h.lines.length === 1);
    expect(h.texts()).toEqual(['late line']);
  });

  it('start_at end skips what files held at the first start, but reads files that appear later from their start', async () => {
    const { dir, logs } = setup();
    writeFileSync(join(logs, 'old.log'), numbered('old', 0, 5));
    const h = await tail(dir, { startAt: 'end' });
    appendFileSync(join(logs, 'old.log'), 'old new\n');
    writeFileSync(join(logs, 'fresh.log'), numbered('fresh', 0, 2));
    await until('lines', () => h.lines.length === 3);
    expect(h.texts().sort()).toEqual(['fresh 0', 'fresh 1', 'old new']);
  });

  it('resumes after a restart from the acknowledged offset: nothing lost, nothing repeated', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'app.log');
    writeFileSync(f, numbered('x', 0, 10));
    const first = await tail(dir);
    await until('10 lines', () => first.lines.length === 10);
    await first.stop();
    appendFileSync(f, numbered('x', 10, 5));
    // start_at end applies to files without a checkpoint only: this one resumes where it was.
    const second = await tail(dir, { startAt: 'end' });
    await until('5 more', () => second.lines.length === 5);
    expect(second.texts()).toEqual(['x 10', 'x 11', 'x 12', 'x 13', 'x 14']);
  });

  it('reads again what was never acknowledged (at least once)', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'app.log');
    writeFileSync(f, numbered('x', 0, 4));
    const first = await tail(dir, {}, false);
    await until('4 lines', () => first.lines.length === 4);
    first.lines[1]!.stream.acknowledge(first.lines[1]!.offset, 0); // only x 0 and x 1 became durable
    await first.stop();
    const second = await tail(dir);
    await until('the rest', () => second.lines.length === 2);
    expect(second.texts()).toEqual(['x 2', 'x 3']);
  });

  it('keeps a file shorter than the fingerprint across restarts, and tells a new file at the same path from it', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'tiny.log');
    writeFileSync(f, 'a\n');
    const first = await tail(dir);
    await until('a', () => first.lines.length === 1);
    appendFileSync(f, 'b\n'); // grows, still shorter than the 64-byte fingerprint
    await until('b', () => first.lines.length === 2);
    await first.stop();
    const second = await tail(dir);
    appendFileSync(f, 'c\n');
    await until('c', () => second.lines.length === 1);
    expect(second.texts()).toEqual(['c']);
    await second.stop();
    // Replaced by other content: a different file, read from its start.
    rmSync(f);
    writeFileSync(f, 'other\n');
    const third = await tail(dir);
    await until('other', () => third.lines.length === 1);
    expect(third.texts()).toEqual(['other']);
  });

  it('rotation by rename: drains the old file (even what is written to it after the rename), then follows the new one', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'app.log');
    const fd = openSync(f, 'a');
    writeSync(fd, numbered('x', 0, 100));
    const h = await tail(dir);
    await until('first 100', () => h.lines.length === 100);
    renameSync(f, join(logs, 'app.log.1')); // not matched by *.log: only the held descriptor reaches it
    writeSync(fd, numbered('x', 100, 50)); // the writer has not reopened yet
    closeSync(fd);
    writeFileSync(f, numbered('y', 0, 30));
    await until('all 180', () => h.lines.length === 180);
    const texts = h.texts();
    expect(texts.filter((t) => t.startsWith('x'))).toEqual(Array.from({ length: 150 }, (_, i) => `x ${i}`));
    expect(texts.filter((t) => t.startsWith('y'))).toEqual(Array.from({ length: 30 }, (_, i) => `y ${i}`));
    await until(
      'the old file let go',
      () => h.source.gauges().find((g) => g.name === 'ferry_source_open_files')!.value === 1,
    );
    expect(h.source.counters.rotations).toBe(1);
  });

  it('rotation into an included name (app.log → app.log.1 with *.log*) goes on with the same file, without reading it twice', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'app.log');
    writeFileSync(f, numbered('x', 0, 20));
    const h = await tail(dir, { include: [join(logs, '*.log*')] });
    await until('20', () => h.lines.length === 20);
    renameSync(f, join(logs, 'app.log.1'));
    appendFileSync(join(logs, 'app.log.1'), numbered('x', 20, 5));
    writeFileSync(f, numbered('y', 0, 3));
    await until('28', () => h.lines.length === 28).catch((e) => {
      console.log(h.texts());
      throw e;
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(h.lines.length).toBe(28);
    expect(new Set(h.texts()).size).toBe(28);
  });

  it('a file re-created at any moment after a rename rotation is read from its start (gaps of 0 to 300 ms, with *.log, *.log* and the literal path)', async () => {
    // A literal path is looked up itself, not found by listing its directory.
    for (const pattern of ['*.log', '*.log*', 'app.log']) {
      const { dir, logs } = setup();
      const f = join(logs, 'app.log');
      // The new file must be found whether or not a poll falls into the gap, and whatever the watcher
      // makes of an unlink and create within 100 ms. Each file stays at the path for several polls (with
      // rotated names outside the include, a file renamed away before any poll saw it cannot be read, and
      // a busy machine delays polls).
      const h = await tail(dir, { include: [join(logs, pattern)], pollIntervalMs: 100, rotateWaitMs: 5000 });
      let n = 0;
      for (const gap of [0, 20, 35, 50, 70, 90, 120, 300]) {
        writeFileSync(f, numbered('line', n, 20));
        n += 20;
        await new Promise((r) => setTimeout(r, 600));
        renameSync(f, `${f}.${gap}`);
        await new Promise((r) => setTimeout(r, gap));
      }
      writeFileSync(f, numbered('line', n, 1));
      n += 1;
      await until(`${n} lines with ${pattern}`, () => new Set(h.texts()).size === n).catch((e) => {
        const missing = Array.from({ length: n }, (_, i) => `line ${i}`).filter((l) => !h.texts().includes(l));
        throw new Error(`${(e as Error).message}: missing ${missing.join(', ')}`);
      });
      await h.stop();
    }
  });

  it('copytruncate: reads the lines written after the truncation, from the start of the file', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'app.log');
    writeFileSync(f, numbered('x', 0, 50));
    const h = await tail(dir);
    await until('50', () => h.lines.length === 50);
    copyFileSync(f, join(logs, 'app.log.1'));
    truncateSync(f, 0);
    await until(
      'truncation seen',
      () => h.source.gauges().find((g) => g.name === 'ferry_source_truncations_total')!.value === 1,
    );
    appendFileSync(f, numbered('y', 0, 10));
    await until('60', () => h.lines.length === 60);
    expect(h.texts().slice(50)).toEqual(Array.from({ length: 10 }, (_, i) => `y ${i}`));
  });

  it('a file truncated and refilled past the old offset between two looks is still read from its start', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'app.log');
    writeFileSync(f, numbered('x', 0, 5));
    const h = await tail(dir, { pollIntervalMs: 1500 });
    await until('5', () => h.lines.length === 5);
    writeFileSync(f, numbered('new content line', 0, 20)); // truncate + rewrite, longer than before
    await until('20 new', () => h.lines.length === 25, 8000);
    expect(h.texts().slice(5)).toEqual(Array.from({ length: 20 }, (_, i) => `new content line ${i}`));
  });

  it('a file deleted while open is drained, then released', async () => {
    const { dir, logs } = setup();
    const f = join(logs, 'app.log');
    const fd = openSync(f, 'a');
    writeSync(fd, numbered('x', 0, 10));
    const h = await tail(dir);
    await until('10', () => h.lines.length === 10);
    unlinkSync(f);
    writeSync(fd, numbered('x', 10, 10));
    writeSync(fd, 'last line without newline');
    closeSync(fd);
    await until('21', () => h.lines.length === 21);
    expect(h.texts().at(-1)).toBe('last line without newline');
    await until('released', () => h.source.gauges().find((g) => g.name === 'ferry_source_open_files')!.value === 0);
  });

  it('many files at once: every line exactly once', async () => {
    const { dir, logs } = setup();
    for (let i = 0; i < 40; i++) writeFileSync(join(logs, `f${i}.log`), numbered(`f${i}`, 0, 100));
    const h = await tail(dir);
    for (let i = 40; i < 60; i++) writeFileSync(join(logs, `f${i}.log`), numbered(`f${i}`, 0, 100));
    await until('6000', () => h.lines.length === 6000, 20_000);
    expect(new Set(h.texts()).size).toBe(6000);
  });

  it('cuts a line longer than max_line_bytes, marks and counts it, and goes on', async () => {
    const { dir, logs } = setup();
    writeFileSync(join(logs, 'app.log'), `short\n${'z'.repeat(5000)}\nafter\n`);
    const h = await tail(dir);
    await until('3', () => h.lines.length === 3);
    expect(h.lines.map((l) => [l.text.length, l.truncated])).toEqual([
      [5, false],
      [1024, true],
      [5, false],
    ]);
    expect(h.source.counters.truncatedLines).toBe(1);
  });

  it('writes checkpoints as JSON naming each file and its acknowledged offset', async () => {
    const { dir, logs } = setup();
    writeFileSync(join(logs, 'app.log'), numbered('x', 0, 3));
    const h = await tail(dir);
    await until('3', () => h.lines.length === 3);
    await h.stop();
    const cp = JSON.parse(readFileSync(h.source.checkpointFile, 'utf8')) as {
      files: { path: string; offset: number }[];
    };
    expect(cp.files).toEqual([expect.objectContaining({ path: join(logs, 'app.log'), offset: 12 })]);
  });
});
