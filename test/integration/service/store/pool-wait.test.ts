/**
 * A wait for a connection of a busy pool (store/db.ts ConnPool): a caller that gives up (its query's time
 * ran out, the service is stopping) leaves the queue at once, and the connection it would have had goes to
 * the next caller, never to nobody.
 */
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Database } from '../../../../src/service/store/db.js';
import { tempDir } from '../../../support/temp-dirs.js';

describe('a wait for a connection of a busy pool', () => {
  it('ends when the caller gives up, and the connection goes to the next in line', async () => {
    const dir = tempDir('ferry-pool-wait-');
    const db = await Database.open(join(dir, 'db.duckdb'), {
      memoryLimitBytes: 256 * 2 ** 20,
      tempDir: join(dir, 'tmp'),
    });
    onTestFinished(() => db.close());
    const pool = await db.newPool(1);
    let finish!: () => void;
    const held = pool.use(async (c) => {
      await c.run('SELECT 1');
      await new Promise<void>((r) => (finish = r));
      return 'held';
    });
    await new Promise((r) => setTimeout(r, 20));
    const gaveUp = new Error('the time ran out');
    let giveUp!: (e: Error) => void;
    const waiting = pool.use((c) => c.all('SELECT 2 AS n'), new Promise<never>((_, reject) => (giveUp = reject)));
    const next = pool.use((c) => c.all('SELECT 3 AS n'));
    giveUp(gaveUp);
    await expect(waiting).rejects.toBe(gaveUp);
    finish();
    expect(await held).toBe('held');
    expect(await next).toEqual([{ n: 3 }]);
    // And the pool still hands out its one connection.
    expect(await pool.use((c) => c.all('SELECT 4 AS n'))).toEqual([{ n: 4 }]);
  });
});
