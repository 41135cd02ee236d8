import { DuckDBConnection, DuckDBInstance, type DuckDBScalarFunction, JSDuckDBValueConverter } from '@duckdb/node-api';
import { DEADLINE_VARIABLE } from '../../sql/deadline.js';
import { ROW_SHARE_VARIABLE } from '../../sql/row-share.js';
import { sqlText } from '../../sql/quote.js';
import { appendColumns, type DoubleColumn, type Int64Column } from './column-append.js';
import { collectGarbage, isOutOfMemory, noteResultCells } from './native-memory.js';
import './duckdb-text.js';

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
  private readonly idlers: (() => void)[] = [];

  /** Runs `fn` holding the lock alone. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.enter(true);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /** Runs `fn` alongside other shared holders. */
  async shared<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.enter(false);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /**
   * Takes the lock and gives the function that lets it go (once, however often it is called): for a
   * caller that may stop waiting before the lock is granted, and lets go once it is.
   */
  async enter(exclusive: boolean): Promise<() => void> {
    await this.acquire(exclusive);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (exclusive) this.writer = false;
      else this.readers--;
      this.grant();
    };
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

  /** Resolves once no one holds the lock or waits for it (at once when no one does). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idlers.push(resolve));
  }

  private isIdle(): boolean {
    return !this.writer && this.readers === 0 && this.waiting.length === 0;
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
    if (this.idlers.length > 0 && this.isIdle()) for (const resolve of this.idlers.splice(0)) resolve();
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

/** A query's result passed the bytes one answer may hold (service.query_limits.max_result_bytes). */
export class ResultTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(
      `the result is larger than ${Math.round(maxBytes / (1024 * 1024))} MiB (service.query_limits.max_result_bytes); take fewer rows (| take N), project fewer columns or shorten the values`,
    );
    this.name = 'ResultTooLarge';
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
 * DuckDB refuses every statement once a fatal error (a checkpoint that failed for memory or disk) has
 * invalidated the database, until it is opened again. The database reopens itself; what arrives meanwhile,
 * or was running then, is told to try again (HTTP 503). Nothing committed is lost: it is in the file or the
 * write-ahead log, which the reopened database replays.
 */
export class DatabaseReopening extends Error {
  constructor(readonly reason: string) {
    super(`the database hit a fatal error (${reason}) and is being reopened; try again in a few seconds`);
    this.name = 'DatabaseReopening';
  }
}

/** An error after which DuckDB refuses every statement until the database is opened again. */
export function isFatal(e: unknown): boolean {
  return e instanceof Error && /^FATAL Error|database has been invalidated/.test(e.message);
}

const firstLine = (e: unknown) => ((e as Error)?.message ?? String(e)).split('\n')[0]!;

/**
 * What went wrong first: a statement refused on the invalidated database carries the error that
 * invalidated it as `Original error: "…"`, and whichever statement reports first names the reopening.
 */
export function fatalReason(e: unknown): string {
  let text = (e as Error)?.message ?? String(e);
  for (let m = /\nOriginal error: "([\s\S]*)"\s*$/.exec(text); m; m = /\nOriginal error: "([\s\S]*)"\s*$/.exec(text))
    text = m[1]!;
  return text.split('\n')[0]!;
}

/**
 * How long a statement told to stop (its time limit passed, or the service is stopping) may run on before
 * its caller is answered anyway: DuckDB looks for an interrupt between vectors, and one long expression
 * (a huge list, a JavaScript function over a long series) runs to its end first.
 */
export const INTERRUPT_GRACE_MS = 1000;

/** The longest a result's conversion to JavaScript holds the event loop before letting others in. */
const READ_SLICE_MS = 10;

export class ConnOps {
  /** Within BEGIN … COMMIT a failed statement aborts the transaction: it cannot simply run again. */
  private inTransaction = false;
  /** Answers the caller of the statement running now, when it is told to stop. */
  private giveUp: ((e: Error) => void) | undefined;
  /** A statement still running whose caller was answered: the connection is busy until it settles. */
  private abandoned: Promise<void> | undefined;

  constructor(
    private readonly raw: DuckDBConnection,
    private readonly onFatal: (e: Error) => void = () => undefined,
  ) {}

  /** Runs one call into DuckDB; a fatal error starts the database's reopening and is DatabaseReopening. */
  private async guard<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      if (!isFatal(e)) throw e;
      this.onFatal(e as Error);
      throw new DatabaseReopening(fatalReason(e));
    }
  }

  /**
   * Runs a statement; one refused for memory runs once more after the memory results no longer
   * referenced held is given back (see native-memory.ts). A failed statement outside a transaction
   * changed nothing, so running it again is safe.
   */
  private async retryingMemory<T>(statement: () => Promise<T>): Promise<T> {
    try {
      return await this.guard(statement);
    } catch (e) {
      if (this.inTransaction || !isOutOfMemory(e) || e instanceof DatabaseReopening) throw e;
      collectGarbage();
      return this.guard(statement);
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

  /** Appends rows given as columns (column-append.ts) to `table`, within this connection's transaction. */
  async append(table: string, columns: readonly (Int64Column | DoubleColumn)[], rows: number): Promise<void> {
    await this.guard(() => appendColumns(this.raw, table, columns, rows));
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
   * The result is read a chunk at a time and refused (ResultTooLarge) once its values pass `maxBytes`:
   * a few rows of long strings can outgrow the process's memory before anything could count them.
   * `rowShare` is what one call whose value grows with a count read from the rows may make a row
   * (sql/row-share.ts); unset, such calls are not checked.
   */
  async columns(sql: string, timeoutMs?: number, maxBytes = Infinity, rowShare?: number): Promise<unknown[][]> {
    let timedOut = false;
    let settled = false;
    const deadline = timeoutMs !== undefined && timeoutMs > 0 ? Date.now() + timeoutMs : 0;
    // Set on every statement that reads it: the connection is pooled and may hold an earlier one.
    if (sql.includes(DEADLINE_VARIABLE))
      await this.guard(() => this.raw.run(`SET VARIABLE ${DEADLINE_VARIABLE} = ${deadline}`));
    if (sql.includes(ROW_SHARE_VARIABLE)) {
      const share = rowShare === undefined ? 'NULL' : String(Math.floor(rowShare));
      await this.guard(() => this.raw.run(`SET VARIABLE ${ROW_SHARE_VARIABLE} = ${share}`));
    }
    const statement = this.retryingMemory(() => this.readBounded(sql, maxBytes));
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
      const { columns, cells, bytes } = await Promise.race([statement, stopped]);
      noteResultCells(cells, bytes);
      return columns;
    } catch (e) {
      // What was read of a result refused for its size is garbage now: given back before the next one.
      if (e instanceof ResultTooLarge) collectGarbage();
      // A JavaScript function that stopped at the deadline fails the statement before the timer can run.
      if (timedOut || (deadline > 0 && Date.now() >= deadline)) throw new QueryTimeout(timeoutMs!);
      throw e;
    } finally {
      clearTimeout(timer);
      this.giveUp = undefined;
      if (!settled) this.abandoned = done.then(() => void (this.abandoned = undefined));
    }
  }

  /**
   * Reads a statement's result into columns a chunk at a time, counting the bytes of its values as they
   * come. The statement itself runs to its end first (DuckDB holds its result, within memory_limit): a
   * streamed result read while another connection altered the table came back with values of other
   * columns (test/integration/service/store/dataset-races.test.ts found it).
   */
  private async readBounded(
    sql: string,
    maxBytes: number,
  ): Promise<{ columns: unknown[][]; cells: number; bytes: number }> {
    const result = await this.raw.run(sql);
    const columns: unknown[][] = Array.from({ length: result.columnCount }, () => []);
    let bytes = 0;
    let cells = 0;
    // The result is whole in memory: its chunks are read without a trip through libuv's pool each, and a
    // large one in slices of the event loop's time, so other requests are served between them.
    let sliceStart = performance.now();
    for (let k = 0, n = result.chunkCount; k < n; k++) {
      if (performance.now() - sliceStart > READ_SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        sliceStart = performance.now();
      }
      const chunk = result.getChunk(k);
      const part = chunk.convertColumns(JSDuckDBValueConverter) as unknown[][];
      cells += chunk.rowCount * part.length;
      part.forEach((values, i) => {
        const into = columns[i]!;
        // Every value costs a slot and its place in the answer's JSON, an empty string too.
        for (const v of values) {
          bytes += typeof v === 'string' ? 8 + v.length : 8;
          into.push(v);
        }
      });
      if (bytes > maxBytes) {
        this.raw.interrupt();
        throw new ResultTooLarge(maxBytes);
      }
    }
    return { columns, cells, bytes };
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    await this.guard(() => this.raw.run('BEGIN TRANSACTION'));
    this.inTransaction = true;
    try {
      const out = await fn();
      await this.guard(() => this.raw.run('COMMIT'));
      return out;
    } catch (e) {
      await this.raw.run('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      this.inTransaction = false;
    }
  }
}

/** What a pool asks of its database: whether it is being reopened, and which opening it is on. */
interface PoolOwner {
  reopening(): string | undefined;
  generation(): number;
  /** A fatal error on a connection of the given opening (one of an earlier opening is old news). */
  onFatal(e: Error, generation: number): void;
}

/**
 * Connections handed out one user at a time: a DuckDB connection runs one statement at a time, and a
 * transaction or a temp table belongs to one piece of work. Callers wait for a free connection, so a long
 * statement (a checkpoint) never holds up work queued behind it while other connections are idle.
 */
export class ConnPool {
  private free: DuckDBConnection[];
  private readonly waiting: ((c: DuckDBConnection) => void)[] = [];
  private readonly running = new Set<DuckDBConnection>();

  constructor(
    private conns: DuckDBConnection[],
    private readonly owner: PoolOwner = { reopening: () => undefined, generation: () => 0, onFatal: () => undefined },
  ) {
    this.free = [...conns];
  }

  get size(): number {
    return this.conns.length;
  }

  /** Runs `fn` on a connection, waiting for one if all are in use, unless `giveUp` rejects first. */
  async use<T>(fn: (c: ConnOps) => Promise<T>, giveUp?: Promise<never>): Promise<T> {
    const reason = this.owner.reopening();
    if (reason !== undefined) throw new DatabaseReopening(reason);
    const conn = this.free.pop() ?? (await this.waitForOne(giveUp));
    const generation = this.owner.generation();
    const ops = new ConnOps(conn, (e) => this.owner.onFatal(e, generation));
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

  private waitForOne(giveUp: Promise<never> | undefined): Promise<DuckDBConnection> {
    return new Promise((resolve, reject) => {
      const waiter = (c: DuckDBConnection) => resolve(c);
      this.waiting.push(waiter);
      // A waiter already handed a connection is out of the queue: it keeps it.
      giveUp?.catch((e: unknown) => {
        const at = this.waiting.indexOf(waiter);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        reject(e as Error);
      });
    });
  }

  private release(conn: DuckDBConnection): void {
    // A connection of the database before it was reopened (or being reopened) is closed, not handed on.
    if (!this.conns.includes(conn) || this.owner.reopening() !== undefined) return conn.closeSync();
    const next = this.waiting.shift();
    if (next) next(conn);
    else this.free.push(conn);
  }

  /** Takes the connections of the reopened database; those in use are closed when given back. */
  replace(conns: DuckDBConnection[]): void {
    for (const c of this.free) c.closeSync();
    this.conns = conns;
    this.free = [...conns];
    while (this.waiting.length && this.free.length) this.waiting.shift()!(this.free.pop()!);
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
  /** The one directory statements may read files from (the ingest spool); none when absent. */
  readableDir?: string;
  /**
   * Leaves settings changeable (external access stays off): only for tests that inject DuckDB's faults
   * with SET debug_checkpoint_abort.
   */
  settingsUnlocked?: boolean;
}

/**
 * DuckDB's share of service.memory_limit: the rest is kept for what JavaScript holds for a query (a result
 * read into the heap and written out as JSON, the text JavaScript functions make), so that DuckDB and
 * JavaScript together stay within the limit (docs/benchmarks.md).
 */
export function duckdbMemory(memoryLimitBytes: number): number {
  return memoryLimitBytes - Math.min(memoryLimitBytes / 4, 128 * 1024 * 1024);
}

/** DuckDB's automatic checkpoint runs at this many times the store's own threshold (see Database.open). */
const SAFETY_NET_CHECKPOINTS = 8;

/** The DuckDB storage format of the files the store writes (see Database.open). */
export const STORAGE_VERSION = 'v1.5.0';

/**
 * The database: one DuckDB file. Extension auto-install is off because nothing may be downloaded at run
 * time; json, icu and parquet are linked into the binding.
 */
export class Database {
  private readonly pools: ConnPool[] = [];
  private readonly functions: DuckDBScalarFunction[] = [];
  private readonly reopenHooks: ((c: ConnOps) => Promise<void>)[] = [];
  /** Set while the database is being reopened: DuckDB's reason for the fatal error. */
  private reopenReason: string | undefined;
  /** Times the database was reopened after a fatal error, and the last such error. */
  reopens = 0;
  lastFatal: { at: string; error: string } | undefined;
  /** Told of a fatal error when the reopening starts, and of the reopening's end (error: it failed, and is tried again). */
  onReopen: (event: { phase: 'start' | 'done' | 'failed'; error: string }) => void = () => undefined;
  /** Which opening of the file this is: bumped when a reopening starts. */
  private generation = 0;
  private readonly owner: PoolOwner = {
    reopening: () => this.reopenReason,
    generation: () => this.generation,
    onFatal: (e, generation) => {
      if (generation === this.generation) this.startReopen(e);
    },
  };
  private instance: DuckDBInstance;
  private closed = false;
  /** The pool of `use`: what the store's own pools (ingest, queries) do not run, the catalog's work first. */
  private readonly general: ConnPool;

  private constructor(
    instance: DuckDBInstance,
    conns: DuckDBConnection[],
    private readonly file: string,
    private readonly config: Record<string, string>,
    private readonly lockOptions: Pick<OpenOptions, 'readableDir' | 'settingsUnlocked'>,
  ) {
    this.instance = instance;
    this.general = new ConnPool(conns, this.owner);
    this.pools.push(this.general);
  }

  static async open(file: string, opts: OpenOptions, poolSize = 4): Promise<Database> {
    const config: Record<string, string> = {
      memory_limit: `${Math.floor(duckdbMemory(opts.memoryLimitBytes) / (1024 * 1024))}MiB`,
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'true',
      temp_directory: opts.tempDir,
      // DuckDB writes new files readable by v0.10 unless told otherwise, and then checkpoints with the older
      // storage format. The current one (the pinned binding's) compresses the same data to the same size
      // for less CPU (docs/benchmarks.md). Files written before keep working.
      storage_compatibility_version: STORAGE_VERSION,
      // Freed memory goes back to the system in the background and after large frees, so the process's
      // resident memory follows what queries use (with cli/duckdb-allocator.ts).
      allocator_background_threads: 'true',
      allocator_flush_threshold: '16MB',
      allocator_bulk_deallocation_flush_threshold: '32MB',
    };
    // The event store checkpoints by itself at checkpointThresholdBytes, when no query holds DuckDB's
    // memory (see EventStore.checkpoint). DuckDB's own automatic checkpoint runs at a commit whatever the
    // queries hold, and one short of memory is fatal: it stays only as a far safety net, beyond what
    // ingest writes while the store's checkpoint waits for a query to end.
    // KiB, not MB: a threshold under 1 MB must not round down to 0, which checkpoints on every commit.
    if (opts.checkpointThresholdBytes)
      config.checkpoint_threshold = `${Math.ceil((SAFETY_NET_CHECKPOINTS * opts.checkpointThresholdBytes) / 1024)}KiB`;
    if (opts.threads) config.threads = String(opts.threads);
    const instance = await DuckDBInstance.create(file, config);
    await lockDown(instance, opts);
    return new Database(instance, await connectMany(instance, poolSize), file, config, opts);
  }

  /** A separate pool of `size` connections (ingest keeps its own, so reads never wait behind it). */
  async newPool(size: number): Promise<ConnPool> {
    const pool = new ConnPool(await connectMany(this.instance, size), this.owner);
    this.pools.push(pool);
    return pool;
  }

  use<T>(fn: (c: ConnOps) => Promise<T>): Promise<T> {
    return this.general.use(fn);
  }

  /** What DuckDB's buffer manager holds now, in bytes, by its own count (`duckdb_memory()`). */
  async memoryBytes(): Promise<number> {
    const [row] = await this.use((c) => c.all('SELECT sum(memory_usage_bytes)::BIGINT AS b FROM duckdb_memory()'));
    return Number(row?.b ?? 0);
  }

  /** Adds a SQL function implemented in JavaScript; DuckDB makes it visible to every connection. */
  registerScalarFunction(fn: DuckDBScalarFunction): void {
    this.functions.push(fn);
    this.general.first().registerScalarFunction(fn);
  }

  /**
   * Work to redo on a reopened database before anything else runs on it: what lives only in the open
   * database (macros), and what is held in memory beside it (read again, as a write caught by the fatal
   * error may or may not have been committed).
   */
  afterReopen(hook: (c: ConnOps) => Promise<void>): void {
    this.reopenHooks.push(hook);
  }

  /** Whether the database is being reopened after a fatal error (requests meanwhile are refused). */
  get reopening(): boolean {
    return this.reopenReason !== undefined;
  }

  /** Throws DatabaseReopening while the database is being reopened, as a statement would. */
  refuseWhileReopening(): void {
    if (this.reopenReason !== undefined) throw new DatabaseReopening(this.reopenReason);
  }

  /** Reopens the database once after a fatal error, however many statements report it. */
  private startReopen(e: Error): void {
    if (this.reopenReason !== undefined) return;
    const reason = fatalReason(e);
    this.reopenReason = reason;
    this.generation++;
    this.lastFatal = { at: new Date().toISOString(), error: reason };
    this.onReopen({ phase: 'start', error: reason });
    void this.reopen(1);
  }

  private async reopen(attempt: number): Promise<void> {
    if (this.closed) return;
    const conns: DuckDBConnection[][] = [];
    try {
      // Connections in use are closed when given back; their statements fail as the old database refuses them.
      try {
        this.instance.closeSync();
      } catch {
        // closed already (an earlier attempt)
      }
      this.instance = await DuckDBInstance.create(this.file, this.config);
      // Closed meanwhile (the service stopping): the new opening is closed too, and nothing is handed out.
      if (this.closed) return this.instance.closeSync();
      await lockDown(this.instance, this.lockOptions);
      for (const p of this.pools) conns.push(await connectMany(this.instance, p.size));
      for (const fn of this.functions) conns[0]![0]!.registerScalarFunction(fn);
      // The hooks run before any connection is handed out: work waiting for one then finds all in place.
      const [conn] = await connectMany(this.instance, 1);
      try {
        const ops = new ConnOps(conn!);
        for (const hook of this.reopenHooks) await hook(ops);
      } finally {
        conn!.closeSync();
      }
      this.pools.forEach((p, i) => p.replace(conns[i]!));
      this.reopens++;
      const reason = this.reopenReason!;
      this.reopenReason = undefined;
      this.onReopen({ phase: 'done', error: reason });
    } catch (e) {
      // No connection of a failed attempt may keep its opening alive beside the next one.
      for (const c of conns.flat()) c.closeSync();
      // Opening again can fail for what caused the error (a full disk): it is tried again, less often.
      this.onReopen({ phase: 'failed', error: firstLine(e) });
      setTimeout(() => void this.reopen(attempt + 1), Math.min(30_000, 1000 * 2 ** (attempt - 1))).unref();
    }
  }

  /** Whether a statement its caller gave up on (it ignored its interrupt) still runs. */
  statementRunning(): boolean {
    return this.pools.some((p) => p.hasRunning());
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
    this.closed = true;
    for (const p of this.pools) p.close();
    if (!this.pools.some((p) => p.hasRunning())) this.instance.closeSync();
  }
}

async function connectMany(instance: DuckDBInstance, n: number): Promise<DuckDBConnection[]> {
  const conns: DuckDBConnection[] = [];
  for (let i = 0; i < n; i++) conns.push(await instance.connect());
  return conns;
}

/**
 * Sets what the store needs, then locks DuckDB down for every connection, before any is handed out: no
 * statement reads or writes a file outside `readableDir` (COPY, read_csv, ATTACH, INSTALL are refused),
 * and no statement changes a setting (SET is refused; DuckDB also never lets external access back on).
 * Whatever SQL a future compiler bug might let through, it cannot reach the file system or undo this.
 */
export async function lockDown(
  instance: DuckDBInstance,
  o: Pick<OpenOptions, 'readableDir' | 'settingsUnlocked'>,
): Promise<void> {
  const c = await instance.connect();
  try {
    // TIMESTAMPTZ values (strptime with %z) must convert to UTC whatever the host's zone is.
    await c.run(`SET GLOBAL TimeZone = 'UTC'`);
    const dir = o.readableDir;
    if (dir) await c.run(`SET allowed_directories = [${sqlText(dir.endsWith('/') ? dir : `${dir}/`)}]`);
    await c.run('SET enable_external_access = false');
    if (!o.settingsUnlocked) await c.run('SET lock_configuration = true');
  } finally {
    c.closeSync();
  }
}
