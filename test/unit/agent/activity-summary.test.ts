/**
 * The agent's summary line: once an interval while events move (the interval's counts, not the totals),
 * nothing while idle, and the totals in the stopped line.
 */
import { describe, expect, it } from 'vitest';
import type { Logger } from 'pino';
import { ActivitySummary } from '../../../src/agent/activity-summary.js';
import type { ComponentStats } from '../../../src/agent/component-stats.js';

const row = (kind: ComponentStats['kind'], name: string, n: number, queue = 0): ComponentStats => ({
  name,
  kind,
  type: kind === 'source' ? 'file' : 'axiom',
  eventsIn: n,
  eventsOut: n,
  dropped: 0,
  errors: 0,
  ...(kind === 'sink' ? { queueBatches: queue } : {}),
});

describe('the activity summary', () => {
  it('says what moved in each interval, nothing when idle, and the totals when stopped', () => {
    const lines: [Record<string, unknown>, string][] = [];
    const log = { info: (o: Record<string, unknown>, msg: string) => lines.push([o, msg]) } as unknown as Logger;
    let n = 100;
    let queue = 0;
    const s = new ActivitySummary(
      () => [row('source', 'app', n), row('transform', 'parse', n), row('sink', 'out', n, queue)],
      log,
      60_000,
    );
    s.tick();
    expect(lines).toEqual([]);
    n = 250;
    queue = 3;
    s.tick();
    expect(lines).toEqual([[{ seconds: 60, 'in.app': 150, 'out.out': 150, 'queued.out': 3 }, 'summary']]);
    s.tick();
    expect(lines).toHaveLength(1);
    s.stopped(true);
    expect(lines[1]).toEqual([{ delivered: true, 'in.app': 250, 'out.out': 250, 'queued.out': 3 }, 'stopped']);
  });
});
