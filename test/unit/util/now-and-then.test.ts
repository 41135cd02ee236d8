/** A warning a peer could repeat at will is said once, then at most once per interval with a count. */
import { describe, expect, it } from 'vitest';
import { NowAndThen } from '../../../src/util/now-and-then.js';

describe('a warning said now and then', () => {
  it('speaks the first time, then once per interval with how many came since', () => {
    const said: number[] = [];
    const w = new NowAndThen(1000);
    for (const t of [1, 2, 3, 500, 1001, 1002, 2500]) w.hit((n) => said.push(n), t);
    expect(said).toEqual([1, 4, 2]);
  });
});
