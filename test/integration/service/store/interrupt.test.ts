/**
 * A statement that does not stop when interrupted (DuckDB looks for an interrupt between vectors, and one
 * long expression runs to its end first) still lets its caller be answered: the time limit is said while
 * the statement runs on, and its connection is handed to no one else until it has ended.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Database, QueryTimeout } from '../../../../src/service/store/db.js';
import { tempDir } from '../../../support/helpers.js';

/**
 * One row whose one expression takes seconds (2.7 s on the development VM; 1.3 s with one operation an element,
 * which a fast period brought within INTERRUPT_GRACE_MS): no vector boundary to notice an interrupt at.
 */
const long = (n: number) =>
  `SELECT list_sum(list_transform(range(${n}), x -> (x * 2) % 7 + (x * 3) % 11 + (x * 5) % 13)) AS s`;
/** Sizes tried in turn: a statement that ended within the interrupt's grace (a fast or lucky moment) proves nothing. */
const SIZES = [60_000_000, 120_000_000, 240_000_000];

let db: Database | undefined;
afterAll(() => db?.close());

/**
 * Opens a database of one connection and abandons a long statement on it (its time limit 50 ms), one that
 * runs on past the interrupt's grace: a larger one when the last ended within it.
 */
async function abandoned(): Promise<{ db: Database; running: Promise<void> }> {
  for (const n of SIZES) {
    const tried = await abandonedOnce(n);
    if (tried.running) return { db: tried.db, running: tried.running };
    tried.db.close();
  }
  throw new Error(`no statement of ${SIZES.join(', ')} elements outlived the interrupt's grace`);
}

async function abandonedOnce(n: number): Promise<{ db: Database; running: Promise<void> | undefined }> {
  const dir = tempDir();
  const opened = await Database.open(
    join(dir, 'db.duckdb'),
    { memoryLimitBytes: 3 * 2 ** 30, tempDir: join(dir, 'tmp') },
    1,
  );
  let running: Promise<void> | undefined;
  await expect(
    opened.use(async (c) => {
      try {
        return await c.columns(long(n), 50);
      } finally {
        running = c.busy();
      }
    }),
  ).rejects.toBeInstanceOf(QueryTimeout);
  return { db: opened, running };
}

describe('interrupting a statement that runs on', () => {
  it('answers the time limit while the statement still runs, and keeps its connection until it ends', async () => {
    const { db: opened, running: stillRunning } = await abandoned();
    db = opened;
    // The pool's one connection is lent again only once the abandoned statement has ended.
    let next = false;
    const after = db.use(async (c) => {
      next = true;
      expect(c.busy()).toBeUndefined();
      return c.columns('SELECT 42 AS v');
    });
    expect(next).toBe(false);
    await stillRunning;
    expect(await after).toEqual([[42]]);
    expect(next).toBe(true);
  });

  it('closing the database does not wait for a statement that ignored its interrupt (shutdown finishes)', async () => {
    const { db: closing, running } = await abandoned();
    let ended = false;
    void running.then(() => (ended = true));
    closing.close();
    // Had close() waited for the statement, its end would be delivered before this timer fires; the
    // statement runs for seconds, so it still runs here: the process's exit ends it, as shutdown does.
    await new Promise((r) => setTimeout(r, 20));
    expect(ended).toBe(false);
    await running;
  });
});
