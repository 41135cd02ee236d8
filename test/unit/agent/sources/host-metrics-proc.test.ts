/** /proc's files read into numbers: text as Linux writes it, with the lines a reader must skip. */
import { describe, expect, it } from 'vitest';
import {
  memoryStates,
  parseDiskstats,
  parseLoadavg,
  parseMeminfo,
  parseMounts,
  parseNetDev,
  parseStat,
} from '../../../../src/agent/sources/host-metrics-proc.js';

describe('host metrics from /proc', () => {
  it('reads CPU seconds by state, per CPU, from /proc/stat', () => {
    const stat = [
      'cpu  200 10 100 5000 30 0 20 0 0 0',
      'cpu0 120 4 60 2500 10 0 15 0 0 0',
      'cpu1 80 6 40 2500 20 0 5 3 0 0',
      'intr 12345 0 0',
      'ctxt 99',
    ].join('\n');
    expect([...parseStat(stat)]).toEqual([
      ['cpu0', [1.2, 0.04, 0.6, 25, 0.1, 0, 0.15, 0]],
      ['cpu1', [0.8, 0.06, 0.4, 25, 0.2, 0, 0.05, 0.03]],
    ]);
  });

  it('reads memory in bytes and splits it into the states of system.memory.usage', () => {
    const info = parseMeminfo(
      [
        'MemTotal:        1000 kB',
        'MemFree:          300 kB',
        'MemAvailable:     600 kB',
        'Buffers:           50 kB',
        'Cached:           150 kB',
        'SReclaimable:      40 kB',
        'SUnreclaim:        10 kB',
        'HugePages_Total:      0',
      ].join('\n'),
    );
    expect(info.get('MemTotal')).toBe(1000 * 1024);
    expect(info.get('HugePages_Total')).toBe(0);
    expect(memoryStates(info)).toEqual({
      used: 460 * 1024,
      free: 300 * 1024,
      buffered: 50 * 1024,
      cached: 150 * 1024,
      slab_reclaimable: 40 * 1024,
      slab_unreclaimable: 10 * 1024,
    });
    expect(memoryStates(new Map())).toBeUndefined();
  });

  it('reads load averages, block devices (not loop or ram), interfaces and mounts with space of their own', () => {
    expect(parseLoadavg('0.52 0.40 0.31 2/345 6789\n')).toEqual([0.52, 0.4, 0.31]);
    expect(parseLoadavg('garbage')).toBeUndefined();
    const disks = parseDiskstats(
      [
        '   8       0 sda 100 5 2000 50 200 10 4000 80 0 1500 130 0 0 0 0',
        '   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0 0 0 0 0',
        '   1       0 ram0 1 0 2 0 0 0 0 0 0 0 0 0 0 0 0',
      ].join('\n'),
    );
    expect([...disks]).toEqual([
      ['sda', { readOps: 100, readBytes: 2000 * 512, writeOps: 200, writeBytes: 4000 * 512, ioTime: 1.5 }],
    ]);
    const net = parseNetDev(
      [
        'Inter-|   Receive                                                |  Transmit',
        ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
        '    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0',
        '  eth0: 5000 50 1 2 0 0 0 0 7000 70 3 4 0 0 0 0',
      ].join('\n'),
    );
    expect(net.get('eth0')).toEqual({
      rxBytes: 5000,
      rxPackets: 50,
      rxErrors: 1,
      rxDropped: 2,
      txBytes: 7000,
      txPackets: 70,
      txErrors: 3,
      txDropped: 4,
    });
    expect(net.has('lo')).toBe(true);
    expect(
      parseMounts(
        [
          '/dev/sda1 / ext4 rw,relatime 0 0',
          'proc /proc proc rw 0 0',
          'tmpfs /run tmpfs rw 0 0',
          '/dev/sdb1 /mnt/my\\040disk xfs rw 0 0',
          '/dev/sda1 / ext4 rw 0 0',
        ].join('\n'),
      ),
    ).toEqual([
      { device: '/dev/sda1', mountpoint: '/', type: 'ext4' },
      { device: '/dev/sdb1', mountpoint: '/mnt/my disk', type: 'xfs' },
    ]);
  });
});
