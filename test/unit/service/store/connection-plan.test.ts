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

  it('leaves a thread free beside every statement that can run: queries first, the catalog, ingest one a core', () => {
    const plan = (queries: number, catalog: number, ingest: number, threads: number, wantedThreads: number) => ({
      queries,
      catalog,
      ingest,
      threads,
      wantedThreads,
      enough: threads >= wantedThreads,
    });
    expect(connectionPlan(16, 2)).toEqual(plan(4, 2, 2, 16, 9));
    expect(connectionPlan(16, 8)).toEqual(plan(4, 2, 8, 16, 15));
    // Ingest gains less with each connection: eight at most, so the daemon's sixteen serve any host.
    expect(connectionPlan(16, 64)).toEqual(plan(4, 2, 8, 16, 15));
    expect(connectionPlan(12, 64)).toEqual(plan(4, 2, 5, 12, 15));
    // libuv's default: one of each, one thread for files and zlib.
    expect(connectionPlan(4, 2)).toEqual(plan(1, 1, 1, 4, 9));
    // Queries take their four before the catalog its second.
    expect(connectionPlan(7, 2)).toEqual(plan(4, 1, 1, 7, 9));
    expect(connectionPlan(9, 2)).toEqual(plan(4, 2, 2, 9, 9));
    // Fewer threads than that: one of each still, whatever waits.
    expect(connectionPlan(1, 2)).toEqual(plan(1, 1, 1, 1, 9));
    for (let threads = 1; threads <= 40; threads++)
      for (const cores of [1, 2, 8, 64]) {
        const p = connectionPlan(threads, cores);
        expect(p.queries).toBeGreaterThanOrEqual(1);
        expect(p.catalog).toBeGreaterThanOrEqual(1);
        expect(p.ingest).toBeGreaterThanOrEqual(1);
        if (threads >= 4) expect(p.queries + p.catalog + p.ingest).toBeLessThanOrEqual(threads - 1);
        // Enough threads: every connection wanted is opened.
        expect(p.enough).toBe(p.queries === 4 && p.catalog === 2 && p.ingest === Math.min(cores, 8));
      }
  });
});
