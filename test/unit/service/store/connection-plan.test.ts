import { describe, expect, it } from 'vitest';
import { connectionPlan, libuvPoolSize } from '../../../../src/service/store/connection-plan.js';

describe("the store's connections, from libuv's pool", () => {
  it('reads UV_THREADPOOL_SIZE as libuv does: 4 unset, atoi as unsigned, 0 making 1, at most 1024', () => {
    expect(libuvPoolSize({})).toBe(4);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '' })).toBe(1);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: 'many' })).toBe(1);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '0' })).toBe(1);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '16' })).toBe(16);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: ' 12threads' })).toBe(12);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '5000' })).toBe(1024);
    expect(libuvPoolSize({ UV_THREADPOOL_SIZE: '-3' })).toBe(1024);
  });

  it('leaves a thread free beside every statement that can run, reads first, ingest one a core', () => {
    expect(connectionPlan(16, 2)).toEqual({ reads: 4, ingest: 2, threads: 16, wantedThreads: 7, enough: true });
    expect(connectionPlan(16, 8)).toEqual({ reads: 4, ingest: 8, threads: 16, wantedThreads: 13, enough: true });
    // Ingest gains less with each connection: eight at most, so the daemon's sixteen serve any host.
    expect(connectionPlan(16, 64)).toEqual({ reads: 4, ingest: 8, threads: 16, wantedThreads: 13, enough: true });
    expect(connectionPlan(12, 64)).toEqual({ reads: 4, ingest: 7, threads: 12, wantedThreads: 13, enough: false });
    // libuv's default: two reads and one ingest, one thread for files and zlib.
    expect(connectionPlan(4, 2)).toEqual({ reads: 2, ingest: 1, threads: 4, wantedThreads: 7, enough: false });
    expect(connectionPlan(7, 2)).toEqual({ reads: 4, ingest: 2, threads: 7, wantedThreads: 7, enough: true });
    // Fewer threads than that: one of each still, whatever waits.
    expect(connectionPlan(1, 2)).toEqual({ reads: 1, ingest: 1, threads: 1, wantedThreads: 7, enough: false });
    for (let threads = 1; threads <= 40; threads++)
      for (const cores of [1, 2, 8, 64]) {
        const p = connectionPlan(threads, cores);
        expect(p.reads).toBeGreaterThanOrEqual(1);
        expect(p.ingest).toBeGreaterThanOrEqual(1);
        if (threads >= 3) expect(p.reads + p.ingest).toBeLessThanOrEqual(threads - 1);
        // Enough threads: every connection wanted is opened.
        expect(p.enough).toBe(p.reads === 4 && p.ingest === Math.min(cores, 8));
      }
  });
});
