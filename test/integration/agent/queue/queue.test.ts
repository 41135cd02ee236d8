import { spawn } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SegmentLog } from '../../../../src/agent/queue/segment-log.js';
import { tempDir } from '../../../support/helpers.js';

const texts = (records: { payload: Buffer }[]) => records.map((r) => r.payload.toString());

describe("segment log (the agent's disk queue)", () => {
  it('reads back in order across segments, keeps what is not acknowledged across reopen, deletes what is', async () => {
    const dir = tempDir('ferry-queue-');
    let log = await SegmentLog.open(dir, { segmentBytes: 100 });
    await log.append(Array.from({ length: 30 }, (_, i) => Buffer.from(`record-${i}`)));
    expect(readdirSync(dir).filter((f) => f.endsWith('.seg')).length).toBeGreaterThan(2);
    const first = await log.read(10);
    expect(texts(first)).toEqual(Array.from({ length: 10 }, (_, i) => `record-${i}`));
    await log.ack(first[first.length - 1]!.next);
    await log.close();

    log = await SegmentLog.open(dir, { segmentBytes: 100 });
    const rest = await log.read(100);
    expect(texts(rest)).toEqual(Array.from({ length: 20 }, (_, i) => `record-${i + 10}`));
    await log.ack(rest[rest.length - 1]!.next);
    // Only the segment being written is left once everything is acknowledged.
    expect(readdirSync(dir).filter((f) => f.endsWith('.seg'))).toHaveLength(1);
    expect(await log.pendingBytes()).toBe(0);
    await log.append([Buffer.from('after')]);
    expect(texts(await log.read(10))).toEqual(['after']);
    await log.close();
  });

  it('writes a record given in pieces as one record, whose checksum holds after reopen', async () => {
    const dir = tempDir('ferry-queue-');
    let log = await SegmentLog.open(dir);
    await log.append([[Buffer.from('a-'), Buffer.from('b-'), Buffer.from('c')], Buffer.from('whole'), []]);
    await log.close();
    log = await SegmentLog.open(dir); // records from an earlier run are read with their CRC checked
    expect(texts(await log.read(10))).toEqual(['a-b-c', 'whole', '']);
    expect(log.corruptRecords).toBe(0);
    await log.close();
  });

  it('cuts a torn tail on open and goes on appending after the last whole record', async () => {
    const dir = tempDir('ferry-queue-');
    let log = await SegmentLog.open(dir);
    await log.append([Buffer.from('one'), Buffer.from('two')]);
    await log.close();
    const file = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith('.seg'))!,
    );
    const whole = statSync(file).size;
    // Half a record, as a crash in the middle of a write leaves it.
    const header = Buffer.alloc(8);
    header.writeUInt32LE(100, 0);
    appendFileSync(file, Buffer.concat([header, Buffer.from('partial')]));
    log = await SegmentLog.open(dir);
    expect(statSync(file).size).toBe(whole);
    await log.append([Buffer.from('three')]);
    expect(texts(await log.read(10))).toEqual(['one', 'two', 'three']);
    await log.close();
  });

  it('reads a queue written before records had tags (.log segments) and appends after it in a .seg segment', async () => {
    const dir = tempDir('ferry-queue-');
    // Records as versions before tags framed them: [length][CRC-32 of the payload][payload], in .log files;
    // the torn half record at the end is cut, as it always was.
    const legacy = (...payloads: string[]) =>
      Buffer.concat(
        payloads.flatMap((p) => {
          const header = Buffer.alloc(8);
          header.writeUInt32LE(Buffer.byteLength(p), 0);
          header.writeUInt32LE(crc32(Buffer.from(p)), 4);
          return [header, Buffer.from(p)];
        }),
      );
    writeFileSync(join(dir, '0000000001.log'), legacy('old-1', 'old-2'));
    writeFileSync(join(dir, '0000000002.log'), Buffer.concat([legacy('old-3'), legacy('torn').subarray(0, 10)]));
    let log = await SegmentLog.open(dir);
    expect(statSync(join(dir, '0000000002.log')).size).toBe(8 + 5);
    await log.append([Buffer.from('new-1')], 2);
    expect(readdirSync(dir).sort()).toEqual(['0000000001.log', '0000000002.log', '0000000003.seg']);
    const records = await log.read(10);
    expect(texts(records)).toEqual(['old-1', 'old-2', 'old-3', 'new-1']);
    expect(records.map((r) => r.tag)).toEqual([0, 0, 0, 2]);
    await log.close();
    // Read again after a restart (CRCs checked), then acknowledged: the old segments go.
    log = await SegmentLog.open(dir);
    const again = await log.read(10);
    expect(texts(again)).toEqual(['old-1', 'old-2', 'old-3', 'new-1']);
    expect(log.corruptRecords).toBe(0);
    await log.ack(again[3]!.next);
    expect(readdirSync(dir).filter((f) => /\.(log|seg)$/.test(f))).toEqual(['0000000003.seg']);
    await log.close();
  });

  it('a record whose tag is flipped on disk fails its checksum', async () => {
    const dir = tempDir('ferry-queue-');
    let log = await SegmentLog.open(dir);
    await log.append([Buffer.from('tagged')], 3);
    await log.append([Buffer.from('after')], 3);
    await log.close();
    const file = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith('.seg'))!,
    );
    const bytes = readFileSync(file);
    bytes[3] = bytes[3]! ^ 0x10; // tag 3 → 2, the length untouched
    writeFileSync(file, bytes);
    log = await SegmentLog.open(dir);
    expect(await log.read(10)).toEqual([]);
    await log.close();
  });

  it('a record whose checksum fails ends the readable log there', async () => {
    const dir = tempDir('ferry-queue-');
    let log = await SegmentLog.open(dir);
    await log.append([Buffer.from('good'), Buffer.from('flipped'), Buffer.from('after')]);
    await log.close();
    const file = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith('.seg'))!,
    );
    const bytes = readFileSync(file);
    bytes[8 + 4 + 8 + 2] = bytes[8 + 4 + 8 + 2]! ^ 0xff; // a bit flip inside the payload of the second record
    writeFileSync(file, bytes);
    log = await SegmentLog.open(dir);
    expect(texts(await log.read(10))).toEqual(['good']);
    await log.close();
  });

  it('loses no appended record when the writer is killed with SIGKILL', async () => {
    const dir = tempDir('ferry-queue-');
    const module = resolve('dist/src/agent/queue/segment-log.js');
    const script = `
      const { SegmentLog } = await import(${JSON.stringify(module)});
      const log = await SegmentLog.open(${JSON.stringify(dir)}, { segmentBytes: 4096 });
      for (let i = 0; ; i++) {
        await log.append([Buffer.from('event-' + i + '-' + 'x'.repeat(i % 50))]);
        process.stdout.write(i + '\\n');
      }`;
    const ackedPerRound: number[] = [];
    for (let round = 0; round < 3; round++) {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let acked = -1;
      let buf = '';
      await new Promise<void>((done) => {
        child.stdout.on('data', (d: Buffer) => {
          buf += d.toString();
          const lines = buf.split('\n');
          buf = lines.pop()!;
          for (const l of lines) acked = Number(l);
          if (acked >= 300 + round * 200 && child.exitCode === null) child.kill('SIGKILL');
        });
        child.on('exit', () => done());
      });
      expect(acked).toBeGreaterThan(0);
      ackedPerRound.push(acked);
      const log = await SegmentLog.open(dir, { segmentBytes: 4096 });
      const ids = texts(await log.read(1_000_000)).map((t) => Number(t.split('-')[1]));
      // Each writer's records form one run 0, 1, 2…: every append it was told about is there, whole and in
      // order (one more, appended but not yet reported, may be too).
      const runs: number[][] = [];
      for (const id of ids) {
        if (id === 0) runs.push([]);
        runs[runs.length - 1]!.push(id);
      }
      expect(runs).toHaveLength(round + 1);
      runs.forEach((run, k) => {
        expect(run).toEqual(Array.from({ length: run.length }, (_, i) => i));
        expect(run.length).toBeGreaterThanOrEqual(ackedPerRound[k]! + 1);
        expect(run.length).toBeLessThanOrEqual(ackedPerRound[k]! + 2);
      });
      expect(log.corruptRecords).toBe(0);
      await log.close();
    }
  });
});
