import { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

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

export type Row = Record<string, unknown>;

/** One DuckDB connection with its own lock, so callers never overlap statements on it. */
export class Conn {
  private readonly lock = new Mutex();
  constructor(readonly raw: DuckDBConnection) {}

  /** Runs fn with exclusive use of this connection (for multi-statement work such as transactions). */
  exclusive<T>(fn: (c: ConnOps) => Promise<T>): Promise<T> {
    return this.lock.run(() => fn(new ConnOps(this.raw)));
  }

  run(sql: string, params?: unknown[]): Promise<void> {
    return this.exclusive((c) => c.run(sql, params));
  }

  all(sql: string, params?: unknown[]): Promise<Row[]> {
    return this.exclusive((c) => c.all(sql, params));
  }

  changes(sql: string, params?: unknown[]): Promise<number> {
    return this.exclusive((c) => c.changes(sql, params));
  }
}

export class ConnOps {
  constructor(private readonly raw: DuckDBConnection) {}

  async run(sql: string, params?: unknown[]): Promise<void> {
    await this.raw.run(sql, params as never);
  }

  /** Runs a statement and returns how many rows it inserted, updated or deleted. */
  async changes(sql: string, params?: unknown[]): Promise<number> {
    const result = await this.raw.run(sql, params as never);
    return Number(result.rowsChanged);
  }

  /** Rows as objects; BIGINT stays bigint, JSON/VARCHAR are strings. */
  async all(sql: string, params?: unknown[]): Promise<Row[]> {
    const reader = await this.raw.runAndReadAll(sql, params as never);
    return reader.getRowObjectsJS() as Row[];
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    await this.raw.run('BEGIN TRANSACTION');
    try {
      const out = await fn();
      await this.raw.run('COMMIT');
      return out;
    } catch (e) {
      await this.raw.run('ROLLBACK').catch(() => undefined);
      throw e;
    }
  }
}

/** Hands out connections one user at a time; callers wait when all are busy. */
export class ConnPool {
  private readonly free: Conn[];
  private readonly waiting: ((c: Conn) => void)[] = [];
  constructor(readonly conns: Conn[]) {
    this.free = [...conns];
  }

  async use<T>(fn: (c: ConnOps) => Promise<T>): Promise<T> {
    const conn = this.free.pop() ?? (await new Promise<Conn>((resolve) => this.waiting.push(resolve)));
    try {
      return await conn.exclusive(fn);
    } finally {
      const next = this.waiting.shift();
      if (next) next(conn);
      else this.free.push(conn);
    }
  }
}

export interface OpenOptions {
  memoryLimitBytes: number;
  checkpointThresholdBytes?: number;
  threads?: number;
  tempDir: string;
}

/**
 * The database: one DuckDB file. Extension auto-install is off because nothing may be downloaded at run
 * time; json, icu and parquet are linked into the binding.
 */
export class Database {
  private readonly pool: Conn[] = [];
  private next = 0;

  private constructor(readonly instance: DuckDBInstance) {}

  static async open(file: string, opts: OpenOptions, poolSize = 4): Promise<Database> {
    const config: Record<string, string> = {
      memory_limit: `${Math.floor(opts.memoryLimitBytes / (1024 * 1024))}MB`,
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'true',
      temp_directory: opts.tempDir,
    };
    // The event store checkpoints by itself at checkpointThresholdBytes (with every core, see
    // EventStore.maybeCheckpoint); DuckDB's own automatic checkpoint stays as a safety net at twice that.
    if (opts.checkpointThresholdBytes) config.checkpoint_threshold = `${Math.floor((2 * opts.checkpointThresholdBytes) / (1024 * 1024))}MB`;
    if (opts.threads) config.threads = String(opts.threads);
    const instance = await DuckDBInstance.create(file, config);
    const db = new Database(instance);
    for (let i = 0; i < poolSize; i++) db.pool.push(await db.connect());
    return db;
  }

  /** A connection for one piece of work; round-robin, each connection serialises its own statements. */
  conn(): Conn {
    const c = this.pool[this.next]!;
    this.next = (this.next + 1) % this.pool.length;
    return c;
  }

  /** A dedicated connection (its temp tables are private to it). */
  async connect(): Promise<Conn> {
    const raw = await this.instance.connect();
    // TIMESTAMPTZ values (strptime with %z) must convert to UTC whatever the host's zone is.
    await raw.run(`SET TimeZone = 'UTC'`);
    return new Conn(raw);
  }

  close(): void {
    for (const c of this.pool) c.raw.closeSync();
    this.instance.closeSync();
  }
}
