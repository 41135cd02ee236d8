import { DuckDBConnection, DuckDBInstance, type DuckDBScalarFunction } from '@duckdb/node-api';
import { DEADLINE_VARIABLE } from '../../sql/deadline.js';
import { collectGarbage, isOutOfMemory, noteResultCells } from './native-memory.js';

/** A serialising lock: DuckDB connections run one statement at a time, and some work must not interleave. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const prev = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((r) => (release = r));
    await prev;
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

/**
 * A lock with shared and exclusive holders: appends to a dataset run side by side (DuckDB merges
 * concurrent appends), while schema changes and deletes hold it alone. A waiting exclusive holder stops
 * new shared ones from jumping ahead, so a schema change is never starved by a stream of appends.
 */
export class SharedLock {
  private readers = 0;
  private writer = false;
  private readonly waiting: { exclusive: boolean; wake: () => void }[] = [];

  /** Runs `fn` holding the lock alone. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(true);
    try {
      return await fn();
    } finally {
      this.writer = false;
      this.grant();
    }
  }

  /** Runs `fn` alongside other shared holders. */
  async shared<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(false);
    try {
      return await fn();
    } finally {
      this.readers--;
      this.grant();
    }
  }

  private acquire(exclusive: boolean): Promise<void> {
    if (this.waiting.length === 0 && !this.writer && (!exclusive || this.readers === 0)) {
      if (exclusive) this.writer = true;
      else this.readers++;
      return Promise.resolve();
    }
    return new Promise((wake) => {
      this.waiting.push({ exclusive, wake });
    });
  }

  private grant(): void {
    while (this.waiting.length > 0 && !this.writer) {
      const next = this.waiting[0]!;
      if (next.exclusive) {
        if (this.readers > 0) return;
        this.writer = true;
      } else this.readers++;
      this.waiting.shift();
      next.wake();
    }
  }
}

export type Row = Record<string, unknown>;

/** A statement interrupted because it ran past its time limit. */
export class QueryTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the query ran longer than ${timeoutMs / 1000} s and was stopped`);
    this.name = 'QueryTimeout';
  }
}

/** The service is stopping: queries running are interrupted and new ones refused. */
export class ServiceStopping extends Error {
  constructor() {
    super('the service is shutting down; try again once it is back');
    this.name = 'ServiceStopping';
  }
}

/**
 * How long a statement told to stop (its time limit passed, or the service is stopping) may run on before
 * its caller is answered anyway: DuckDB looks for an interrupt between vectors, and one long expression
 * (a huge list, a JavaScript function over a long series) runs to its end first.
 */
export const INTERRUPT_GRACE_MS = 1000;

export class ConnOps {
  /** Within BEGIN … COMMIT a failed statement aborts the transaction: it cannot simply run again. */
  private inTransaction = false;
  /** Answers the caller of the statement running now, when it is told to stop. */
  private giveUp: ((e: Error) => void) | undefined;
  /** A statement still running whose caller was answered: the connection is busy until it settles. */
  private abandoned: Promise<void> | undefined;

  constructor(private readonly raw: DuckDBConnection) {}

  /**
   * Runs a statement; one refused for memory runs once more after the memory results no longer
   * referenced held is given back (see native-memory.ts). A failed statement outside a transaction
   * changed nothing, so running it again is safe.
   */
  private async retryingMemory<T>(statement: () => Promise<T>): Promise<T> {
    try {
      return await statement();
    } catch (e) {
      if (this.inTransaction || !isOutOfMemory(e)) throw e;
      collectGarbage();
      return statement();
    }
  }

  /**
   * Interrupts the statement running on this connection (it fails with DuckDB's INTERRUPT error); a read
   * that has not stopped INTERRUPT_GRACE_MS later is answered with `reason` and left to finish alone.
   */
  interrupt(reason: Error = new Error('the statement was interrupted')): void {
    this.raw.interrupt();
    const giveUp = this.giveUp;
    if (giveUp) setTimeout(() => giveUp(reason), INTERRUPT_GRACE_MS).unref();
  }

  /** Resolves when no statement runs on this connection, undefined when none does now. */
  busy(): Promise<void> | undefined {
    return this.abandoned;
  }

  async run(sql: string, params?: unknown[]): Promise<void> {
    await this.retryingMemory(() => this.raw.run(sql, params as never));
  }

  /** Runs a statement and returns how many rows it inserted, updated or deleted. */
  async changes(sql: string, params?: unknown[]): Promise<number> {
    const result = await this.retryingMemory(() => this.raw.run(sql, params as never));
    return Number(result.rowsChanged);
  }

  /** Rows as objects; BIGINT stays bigint, JSON/VARCHAR are strings. */
  async all(sql: string, params?: unknown[]): Promise<Row[]> {
    const reader = await this.retryingMemory(() => this.raw.runAndReadAll(sql, params as never));
    noteResultCells(reader.currentRowCount * reader.columnCount);
    return reader.getRowObjectsJS() as Row[];
  }

  /**
   * Result columns, column-major; BIGINT stays bigint, JSON/VARCHAR are strings. With `timeoutMs`, a
   * statement still running then is interrupted and QueryTimeout is thrown (within INTERRUPT_GRACE_MS).
   */
  async columns(sql: string, timeoutMs?: number): Promise<unknown[][]> {
    let timedOut = false;
    let settled = false;
    const deadline = timeoutMs !== undefined && timeoutMs > 0 ? Date.now() + timeoutMs : 0;
    // Set on every statement that reads it: the connection is pooled and may hold an earlier one.
    if (sql.includes(DEADLINE_VARIABLE)) await this.raw.run(`SET VARIABLE ${DEADLINE_VARIABLE} = ${deadline}`);
    const statement = this.retryingMemory(() => this.raw.runAndReadAll(sql));
    const done = statement.then(
      () => void (settled = true),
      () => void (settled = true),
    );
    const stopped = new Promise<never>((_, reject) => (this.giveUp = reject));
    const timer =
      timeoutMs !== undefined && timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            this.interrupt(new QueryTimeout(timeoutMs));
          }, timeoutMs)
        : undefined;
    try {
      const reader = await Promise.race([statement, stopped]);
      noteResultCells(reader.currentRowCount * reader.columnCount);
      return reader.getColumnsJS() as unknown[][];
    } catch (e) {
      // A JavaScript function that stopped at the deadline fails the statement before the timer can run.
      if (timedOut || (deadline > 0 && Date.now() >= deadline)) throw new QueryTimeout(timeoutMs!);
      throw e;
    } finally {
      clearTimeout(timer);
      this.giveUp = undefined;
      if (!settled) this.abandoned = done.then(() => void (this.abandoned = undefined));
    }
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    await this.raw.run('BEGIN TRANSACTION');
    this.inTransaction = true;
    try {
      const out = await fn();
      await this.raw.run('COMMIT');
      return out;
    } catch (e) {
      await this.raw.run('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      this.inTransaction = false;
    }
  }
}

/**
 * Connections handed out one user at a time: a DuckDB connection runs one statement at a time, and a
 * transaction or a temp table belongs to one piece of work. Callers wait for a free connection, so a long
 * statement (a checkpoint) never holds up work queued behind it while other connections are idle.
 */
export class ConnPool {
  private readonly free: DuckDBConnection[];
  private readonly waiting: ((c: DuckDBConnection) => void)[] = [];
  private readonly running = new Set<DuckDBConnection>();

  constructor(private readonly conns: DuckDBConnection[]) {
    this.free = [...conns];
  }

  async use<T>(fn: (c: ConnOps) => Promise<T>): Promise<T> {
    const conn = this.free.pop() ?? (await new Promise<DuckDBConnection>((resolve) => this.waiting.push(resolve)));
    const ops = new ConnOps(conn);
    try {
      return await fn(ops);
    } finally {
      // A statement its caller gave up on still holds the connection: it is handed on once that ends.
      const busy = ops.busy();
      if (busy) {
        this.running.add(conn);
        void busy.then(() => {
          this.running.delete(conn);
          this.release(conn);
        });
      } else this.release(conn);
    }
  }

  private release(conn: DuckDBConnection): void {
    const next = this.waiting.shift();
    if (next) next(conn);
    else this.free.push(conn);
  }

  /** Whether a statement its caller gave up on still runs on a connection of this pool. */
  hasRunning(): boolean {
    return this.running.size > 0;
  }

  /** Closes the connections; one still running an abandoned statement is left to the process's exit. */
  close(): void {
    for (const c of this.conns) if (!this.running.has(c)) c.closeSync();
  }

  first(): DuckDBConnection {
    return this.conns[0]!;
  }
}

export interface OpenOptions {
  memoryLimitBytes: number;
  checkpointThresholdBytes?: number;
  threads?: number;
  tempDir: string;
}

/** The DuckDB storage format of the files the store writes (see Database.open). */
export const STORAGE_VERSION = 'v1.5.0';

/**
 * The database: one DuckDB file. Extension auto-install is off because nothing may be downloaded at run
 * time; json, icu and parquet are linked into the binding.
 */
export class Database {
  private readonly pools: ConnPool[] = [];

  private constructor(
    readonly instance: DuckDBInstance,
    private readonly general: ConnPool,
  ) {
    this.pools.push(general);
  }

  static async open(file: string, opts: OpenOptions, poolSize = 4): Promise<Database> {
    const config: Record<string, string> = {
      memory_limit: `${Math.floor(opts.memoryLimitBytes / (1024 * 1024))}MB`,
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'true',
      temp_directory: opts.tempDir,
      // DuckDB writes new files readable by v0.10 unless told otherwise, and then checkpoints with the older
      // storage format. The current one (the pinned binding's) compresses the same data to the same size
      // for less CPU (docs/benchmarks.md). Files written before keep working.
      storage_compatibility_version: STORAGE_VERSION,
    };
    // The event store checkpoints by itself at checkpointThresholdBytes (with every core, see
    // EventStore.maybeCheckpoint); DuckDB's own automatic checkpoint stays as a safety net at twice that.
    // KiB, not MB: a threshold under 1 MB must not round down to 0, which checkpoints on every commit.
    if (opts.checkpointThresholdBytes)
      config.checkpoint_threshold = `${Math.ceil((2 * opts.checkpointThresholdBytes) / 1024)}KiB`;
    if (opts.threads) config.threads = String(opts.threads);
    const instance = await DuckDBInstance.create(file, config);
    return new Database(instance, new ConnPool(await connectMany(instance, poolSize)));
  }

  /** A separate pool of `size` connections (ingest keeps its own, so reads never wait behind it). */
  async newPool(size: number): Promise<ConnPool> {
    const pool = new ConnPool(await connectMany(this.instance, size));
    this.pools.push(pool);
    return pool;
  }

  use<T>(fn: (c: ConnOps) => Promise<T>): Promise<T> {
    return this.general.use(fn);
  }

  /** Adds a SQL function implemented in JavaScript; DuckDB makes it visible to every connection. */
  registerScalarFunction(fn: DuckDBScalarFunction): void {
    this.general.first().registerScalarFunction(fn);
  }

  run(sql: string, params?: unknown[]): Promise<void> {
    return this.use((c) => c.run(sql, params));
  }

  all(sql: string, params?: unknown[]): Promise<Row[]> {
    return this.use((c) => c.all(sql, params));
  }

  changes(sql: string, params?: unknown[]): Promise<number> {
    return this.use((c) => c.changes(sql, params));
  }

  /**
   * Closes every connection and the database. A statement still running that ignored its interrupt keeps
   * the database open (closing it would wait for the statement); the process's exit ends both, and
   * nothing is lost: what was committed is in the write-ahead log, and a read writes nothing.
   */
  close(): void {
    for (const p of this.pools) p.close();
    if (!this.pools.some((p) => p.hasRunning())) this.instance.closeSync();
  }
}

async function connectMany(instance: DuckDBInstance, n: number): Promise<DuckDBConnection[]> {
  const conns: DuckDBConnection[] = [];
  for (let i = 0; i < n; i++) {
    const c = await instance.connect();
    // TIMESTAMPTZ values (strptime with %z) must convert to UTC whatever the host's zone is.
    await c.run(`SET TimeZone = 'UTC'`);
    conns.push(c);
  }
  return conns;
}
