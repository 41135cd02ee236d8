/**
 * The event store: datasets as DuckDB tables in one database file, ingest of NDJSON/JSON files parsed by
 * DuckDB itself, and the internal read API the query engine builds on.
 *
 * Durability: an ingest returns only after its transaction committed; DuckDB has then written the rows to
 * its write-ahead log, so a crash (even kill -9) after the response loses nothing, and any query started
 * after the response sees the rows (read-your-writes).
 */
import type { DuckDBScalarFunction } from '@duckdb/node-api';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CATALOG_DDL,
  type DatasetRecord,
  type FieldRecord,
  deleteDatasetRows,
  getMeta,
  insertDataset,
  insertField,
  loadDatasets,
  loadFields,
  loadInputBytes,
  saveInputBytes,
  setMeta,
  updateDataset,
  updateField,
} from './catalog.js';
import {
  type ConnOps,
  type ConnPool,
  Database,
  Mutex,
  QueryTimeout,
  type Row,
  ServiceStopping,
  SharedLock,
} from './db.js';
import { collectGarbage, isOutOfMemory } from './native-memory.js';
import { conflict, invalid, notFound, StoreError } from './errors.js';
import { SQL_TYPE, type FieldType } from './field-types.js';
import {
  BatchShape,
  failuresSql,
  insertSql,
  type KnownPaths,
  type PlanOptions,
  planColumns,
  sqlString,
  type SchemaField,
  TBIT_MACRO,
  collisionsQuery,
} from './ingest-plan.js';
import { sqlIdent } from '../../sql/quote.js';
import { checkTimestampFormat, TIME_MACROS } from '../../sql/time.js';
import { APL_MACROS } from '../../apl/functions/macros.js';
import { parseJsonText } from '../../util/json-text.js';
import type { BodyFacts } from '../../ingest/body-facts.js';
import { clampNs, formatRfc3339Nano, nowNs } from '../../util/time.js';
import { datasetNameProblem, hasReservedPrefix } from './dataset-name.js';
import { METRICS_KIND, metricsTables, metricsTablesDdl } from './metrics-tables.js';
import { connectionPlan, type ConnectionPlan } from './connection-plan.js';
import { longestInStats, measureSql, statsSql } from './longest-values.js';

/**
 * The spec's grouped event form, `{"time": …, "data": {…}, "labels": {…}}` (those keys only, `data` an
 * object, `time` a string, a number or null): the event is `data`'s fields, each label a field beside them (replacing a field of the same
 * name, as X-Axiom-Event-Labels does) and `time` its _time. A byte search screens the rows first, so a
 * batch without the form costs no extra JSON parse.
 */
const UNGROUP_SQL = `UPDATE raw SET j = json_merge_patch(j->'data',
    CASE WHEN json_type(j, '$.labels') = 'OBJECT' THEN j->'labels' ELSE '{}' END,
    CASE WHEN json_type(j, '$.time') IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE') THEN json_object('_time', j->'time') ELSE '{}' END)
  WHERE contains(j::VARCHAR, '"data"') AND json_type(j, '$.data') = 'OBJECT'
    AND list_has_all(['time', 'data', 'labels'], json_keys(j))
    AND coalesce(json_type(j, '$.labels'), 'OBJECT') = 'OBJECT'
    AND coalesce(json_type(j, '$.time'), 'NULL') IN ('NULL', 'VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE')`;

export const DATASET_KINDS = [
  'service:events:v1',
  'axiom:events:v1',
  'otel:logs:v1',
  'otel:traces:v1',
  'otel:metrics:v1',
];
const MAP_FIELD_NAME = /^[a-zA-Z0-9]+([a-zA-Z0-9_.-]*[a-zA-Z0-9]+)?$/;
const NS_PER_DAY = 86_400_000_000_000n;

export interface StoreOptions {
  dataDir: string;
  memoryLimitBytes: number;
  /** The connections to open (connection-plan.ts): by default from libuv's pool and the cores. */
  connections?: ConnectionPlan;
  checkpointThresholdBytes?: number;
  threads?: number;
  maxFieldsPerDataset: number;
  /** Retention for datasets that do not set their own (useRetentionPeriod false); 0 keeps data forever. */
  defaultRetentionDays: number;
  maxObjectBytes: number;
  now?: () => bigint;
  /** Called with errors of background work (checkpoints), which has no caller to throw to. */
  onBackgroundError?: (err: unknown, what: string) => void;
  /**
   * JavaScript functions for queries to call (query/functions.ts), registered on every connection and
   * again after a reopen; none when the store is opened for ingest alone.
   */
  functions?: DuckDBScalarFunction[];
  /** DuckDB's settings stay changeable: only for tests that inject its faults (see db.ts). */
  settingsUnlocked?: boolean;
  /**
   * How long a due checkpoint lets reads go on while it waits for a moment none runs, before it holds new
   * ones back (the service's query_timeout: the longest a read runs). DEFAULT_CHECKPOINT_PATIENCE_MS unless set.
   */
  checkpointPatienceMs?: number;
}

/** A due checkpoint's patience with reads where none is given (see StoreOptions.checkpointPatienceMs). */
const DEFAULT_CHECKPOINT_PATIENCE_MS = 60_000;

export interface IngestOptions {
  timestampField?: string;
  timestampFormat?: string;
  labels?: Record<string, unknown>;
  /** What the caller saw in the file's bytes as it wrote them; without them the store looks itself. */
  facts?: BodyFacts;
}

export interface IngestFailure {
  timestamp: string;
  error: string;
}

export interface IngestResult {
  ingested: number;
  failed: number;
  failures: IngestFailure[];
  /** Events stored with a value set aside: two inputs named one field (README: Fields and types). */
  collisions: number;
}

export interface ReadOptions {
  startNs?: bigint;
  endNs?: bigint;
  limit?: number;
  order?: 'asc' | 'desc';
  /** Only events whose string field equals the value (none when the dataset has no such field). */
  match?: { field: string; value: string };
}

/** An event as the read API returns it: flat dotted field names plus _time and _sysTime (RFC 3339). */
export type StoredEvent = Record<string, unknown> & { _time: string; _sysTime: string; _rowId: string };

interface DatasetState {
  record: DatasetRecord;
  fields: Map<string, FieldRecord>;
  known: KnownPaths;
  nextSeq: bigint;
  /** Appends hold it shared; schema changes, deletes and metadata updates hold it alone. */
  lock: SharedLock;
  /** Bumped by every write; whole-table statistics are cached against it. */
  version: number;
  /**
   * Set anew (store-wide sequence) when the dataset is made and once each schema change is published,
   * before any row needing it is inserted.
   */
  schemaVersion: number;
  /** From a schema change's (or the dataset's deletion's) first statement to its publication: the table may differ from `fields`. */
  schemaChanging?: boolean;
  stats?: { version: number; rows: number; minNs?: bigint; maxNs?: bigint };
  /** The longest value (bytes) of text columns, by column, as of `version`. */
  longest?: { version: number; bytes: Map<string, number> };
  /** Bytes of events received (info's inputBytes); `inputDirty` until written to the catalog. */
  inputBytes: number;
  inputDirty?: boolean;
  /** Bytes of the dataset's checkpointed blocks, as of this version and checkpoint. */
  storage?: { version: number; checkpoint: number; bytes: number; until: number };
}

/** What GET /v1/datasets/{id}/info reports of a dataset beside its fields. */
export interface DatasetInfo {
  numEvents: number;
  minNs?: bigint;
  maxNs?: bigint;
  inputBytes: number;
  compressedBytes: number;
}

/**
 * A dataset's storage walk reads a row per segment: the size of one of STORAGE_WALK_LONG segments or more
 * (tens of millions of rows) stands for STORAGE_WALK_STANDS_MS while the dataset keeps changing.
 */
const STORAGE_WALK_LONG = 10_000;
const STORAGE_WALK_STANDS_MS = 5_000;

/** How often received byte counts are written to the catalog (and at close). */
const INPUT_BYTES_FLUSH_MS = 10_000;

export class EventStore {
  private readonly datasets = new Map<string, DatasetState>();
  private schemaSeq = 0;
  private readonly catalogLock = new Mutex();
  private ingestPool!: ConnPool;
  /** Queries' statements: apart from the catalog's (the database's general pool), which they never hold up. */
  private queryPool!: ConnPool;
  private readonly activeReads = new Set<ConnOps>();
  /**
   * Reads hold it shared, a checkpoint alone. DuckDB's checkpoint pins the blocks it writes, and one that
   * cannot (a query holds all of memory_limit) is fatal to the database: every request fails until it is
   * reopened. A due checkpoint waits for a moment no read runs, reads going on meanwhile; past
   * checkpointPatienceMs (or at once for an ingest refused for memory) it holds new reads back until the
   * running ones end (query_timeout bounds them), a query counting that wait in its time. Writes pass:
   * they hold little memory (a batch's temp table spills), and an ingest waits for a query only when
   * refused for memory.
   */
  private readonly checkpointGate = new SharedLock();
  /** Names (lower case) of the datasets the service keeps for itself: the audit trail, the monitor runs. */
  private readonly systemDatasets = new Set<string>();
  private readsStopped = false;
  /**
   * What reads waiting (at the checkpoint gate, for a connection) do when reads stop: each removes its own
   * when done, so a service that runs for months holds none of the finished ones (a race against one
   * promise that never settles kept a reaction for every read).
   */
  private readonly onReadsStop = new Set<(e: Error) => void>();
  private checkpointing: Promise<void> | undefined;
  /** A checkpoint holds the gate and runs (it is not merely waiting for the reads). */
  private checkpointRunning = false;
  /** Makes the due checkpoint hold new reads back now (see checkpoint). */
  private insistOnCheckpoint: (() => void) | undefined;
  private closing = false;
  /** Checkpoints completed: a dataset's blocks on disk change with each. */
  private checkpoints = 0;
  private inputBytesTimer?: NodeJS.Timeout;
  readonly now: () => bigint;

  /** The connections opened, and whether libuv's pool had threads enough for them all. */
  readonly connections: ConnectionPlan;

  private constructor(
    readonly db: Database,
    readonly opts: StoreOptions,
    readonly tempDir: string,
  ) {
    this.connections = opts.connections!;
    this.now = opts.now ?? nowNs;
  }

  static async open(opts: StoreOptions): Promise<EventStore> {
    // The events are the user's: the data directory is the owner's alone (files in it are 0600 under the
    // daemon's umask, see cli/main.ts).
    if (!existsSync(opts.dataDir)) mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    const tempDir = join(opts.dataDir, 'tmp');
    rmSync(tempDir, { recursive: true, force: true });
    mkdirSync(join(tempDir, 'spool'), { recursive: true });
    const connections = opts.connections ?? connectionPlan();
    const db = await Database.open(
      join(opts.dataDir, 'ferry.duckdb'),
      {
        memoryLimitBytes: opts.memoryLimitBytes,
        checkpointThresholdBytes: opts.checkpointThresholdBytes,
        threads: opts.threads,
        tempDir: join(tempDir, 'duckdb'),
        readableDir: join(tempDir, 'spool'),
        settingsUnlocked: opts.settingsUnlocked,
      },
      connections.catalog,
    );
    for (const fn of opts.functions ?? []) db.registerScalarFunction(fn);
    const store = new EventStore(db, { ...opts, connections }, tempDir);
    try {
      await store.init();
    } catch (e) {
      db.close();
      throw e;
    }
    return store;
  }

  private async init(): Promise<void> {
    // Each ingest works in its own connection (its temp table is private), and appends to one dataset run
    // side by side (see insertBatch), so one connection per core keeps every core busy; more only
    // oversubscribe them (and past eight, gain little). Further requests spool their bodies and wait.
    // libuv's pool may allow fewer (connection-plan.ts).
    this.ingestPool = await this.db.newPool(this.connections.ingest);
    this.queryPool = await this.db.newPool(this.connections.queries);
    await this.db.use((c) => this.load(c));
    this.db.afterReopen((c) => this.load(c));
    this.inputBytesTimer = setInterval(() => {
      this.flushInputBytes().catch((err: unknown) => this.opts.onBackgroundError?.(err, 'recording received bytes'));
    }, INPUT_BYTES_FLUSH_MS);
    this.inputBytesTimer.unref();
  }

  /**
   * The catalog's macros, and each dataset's record, fields and next sequence number as the database holds
   * them. Again after the database was reopened: a schema change the fatal error interrupted may or may
   * not have been committed. A dataset keeps its lock and counts, so work waiting on it goes on.
   */
  private async load(c: ConnOps): Promise<void> {
    for (const ddl of [...CATALOG_DDL, TBIT_MACRO, ...TIME_MACROS, ...APL_MACROS]) await c.run(ddl);
    const records = await loadDatasets(c);
    const inputBytes = await loadInputBytes(c);
    const names = new Set(records.map((r) => r.name));
    for (const name of [...this.datasets.keys()]) if (!names.has(name)) this.datasets.delete(name);
    for (const record of records) {
      // A metrics dataset made before metrics were stored gains its tables, empty.
      if (record.kind === METRICS_KIND) for (const ddl of metricsTablesDdl(record.table, sqlIdent)) await c.run(ddl);
      const fields = new Map((await loadFields(c, record.name)).map((f) => [f.name, f]));
      const max = await c.all(`SELECT max(_seq) AS m FROM ${sqlIdent(record.table)}`);
      const nextSeq = max[0]?.m == null ? 0n : BigInt(max[0].m as bigint) + 1n;
      const d = this.datasets.get(record.name);
      if (d && d.record.table === record.table) {
        Object.assign(d, { record, fields, known: emptyKnown(), schemaVersion: ++this.schemaSeq });
        if (nextSeq > d.nextSeq) d.nextSeq = nextSeq;
        // Counts not yet written stay: the reopened file holds the last ones written.
        d.inputBytes = Math.max(d.inputBytes, inputBytes.get(record.name) ?? 0);
        d.version++;
        continue;
      }
      this.datasets.set(record.name, {
        record,
        fields,
        known: emptyKnown(),
        nextSeq,
        lock: new SharedLock(),
        version: 0,
        schemaVersion: ++this.schemaSeq,
        inputBytes: inputBytes.get(record.name) ?? 0,
      });
    }
  }

  /**
   * Folds the WAL into the compressed database file once it passes the threshold; the WAL file size is a
   * cheap stat after each commit. It runs on service.threads workers: DuckDB's settings are locked once the
   * store is open (db.ts lockDown), so it no longer takes every core for its duration.
   */
  private maybeCheckpoint(): void {
    const threshold = this.opts.checkpointThresholdBytes;
    if (!threshold || this.checkpointing) return;
    let walBytes = 0;
    try {
      walBytes = statSync(join(this.opts.dataDir, 'ferry.duckdb.wal')).size;
    } catch {
      return; // no WAL: nothing to fold
    }
    if (walBytes < threshold) return;
    void this.checkpoint().catch((err: unknown) => this.opts.onBackgroundError?.(err, 'checkpoint'));
  }

  /**
   * Folds the WAL into the file with no read running; one at a time (a caller during one waits for it).
   * `insist`: holds new reads back at once, not after checkpointPatienceMs (see checkpointGate). One still
   * waiting when the store closes gives up: close() folds the WAL itself.
   */
  private checkpoint(insist = false): Promise<void> {
    if (this.checkpointing) {
      if (insist) this.insistOnCheckpoint?.();
      return this.checkpointing;
    }
    let insistNow!: () => void;
    const insisted = new Promise<void>((resolve) => (insistNow = resolve));
    const patience = setTimeout(
      insistNow,
      insist ? 0 : (this.opts.checkpointPatienceMs ?? DEFAULT_CHECKPOINT_PATIENCE_MS),
    );
    patience.unref();
    this.insistOnCheckpoint = insistNow;
    const running = (async () => {
      await Promise.race([this.checkpointGate.idle(), insisted]);
      clearTimeout(patience);
      this.insistOnCheckpoint = undefined;
      await this.checkpointGate.run(async () => {
        // A read its caller was answered for may still run (it ignored its interrupt) and hold DuckDB's
        // memory: the checkpoint is then left to the next write past the threshold.
        if (this.closing || this.db.statementRunning()) return;
        this.checkpointRunning = true;
        try {
          await this.db.use(async (c) => {
            // Results V8 has not collected yet hold DuckDB's memory: given back first (their finalizers
            // run on the next turn of the loop).
            collectGarbage();
            await new Promise((resolve) => setImmediate(resolve));
            await c.run('CHECKPOINT');
            this.checkpoints++;
          });
        } finally {
          this.checkpointRunning = false;
        }
      });
    })();
    this.checkpointing = running.catch(() => undefined).finally(() => (this.checkpointing = undefined));
    return running;
  }

  /** Resolves when background work (a checkpoint in progress) has finished. */
  async idle(): Promise<void> {
    await this.checkpointing;
  }

  /**
   * Checkpoints (folding the WAL into the compressed file) and closes. A read its caller was answered for
   * that still runs (it ignored its interrupt) holds DuckDB's memory: then the WAL is left for the next
   * start to replay, as a checkpoint beside it could be fatal.
   */
  async close(): Promise<void> {
    clearInterval(this.inputBytesTimer);
    this.closing = true;
    if (this.checkpointRunning) await this.idle();
    await this.catalogLock.run(async () => {
      await Promise.all([...this.datasets.values()].map((d) => d.lock.run(async () => undefined)));
      await this.writeInputBytes().catch((err: unknown) =>
        this.opts.onBackgroundError?.(err, 'recording received bytes'),
      );
      if (!this.db.statementRunning()) await this.db.run('CHECKPOINT').catch(() => undefined);
      this.db.close();
    });
  }

  // ---- datasets -------------------------------------------------------------------------------------

  listDatasets(): DatasetRecord[] {
    return [...this.datasets.values()].map((d) => ({ ...d.record })).sort((a, b) => a.name.localeCompare(b.name));
  }

  getDataset(name: string): DatasetRecord {
    return { ...this.state(name).record };
  }

  hasDataset(name: string): boolean {
    return this.datasets.has(name);
  }

  private state(name: string): DatasetState {
    const d = this.datasets.get(name);
    if (!d) throw notFound(`dataset "${name}"`);
    return d;
  }

  async createDataset(input: {
    name: string;
    description?: string;
    kind?: string;
    retentionDays?: number;
    useRetentionPeriod?: boolean;
    edgeDeployment?: string;
    who: string;
    /** A dataset the service keeps for itself (the audit trail): the reserved "axiom-" prefix is allowed. */
    system?: boolean;
  }): Promise<DatasetRecord> {
    const { name } = input;
    const problem = datasetNameProblem(name, input.system);
    if (problem) throw invalid(problem);
    if (!input.system && this.systemDatasets.has(name.toLowerCase()))
      throw invalid(
        `invalid dataset name "${name}": the service keeps a dataset of that name (in any case) for itself`,
      );
    const kind = input.kind || 'service:events:v1';
    if (!DATASET_KINDS.includes(kind))
      throw invalid(`invalid dataset kind "${kind}": one of ${DATASET_KINDS.join(', ')}`);
    const retention = checkRetention(input.retentionDays, input.useRetentionPeriod);
    return this.catalogLock.run(async () => {
      if (this.datasets.has(name)) throw conflict(`dataset "${name}" already exists`);
      const now = new Date().toISOString();
      return this.db.use(async (c) =>
        c.transaction(async () => {
          const n = Number((await getMeta(c, 'next_table')) ?? '1');
          await setMeta(c, 'next_table', String(n + 1));
          const record: DatasetRecord = {
            name,
            table: `ev_${n}`,
            description: input.description ?? '',
            kind,
            who: input.who,
            created: now,
            updatedAt: now,
            ...retention,
            mapFields: [],
            nextColumn: 1,
            edgeDeployment: input.edgeDeployment ?? '',
          };
          await c.run(
            `CREATE TABLE ${sqlIdent(record.table)} (_time TIMESTAMP_NS, _sysTime TIMESTAMP_NS, _seq BIGINT)`,
          );
          if (kind === METRICS_KIND) for (const ddl of metricsTablesDdl(record.table, sqlIdent)) await c.run(ddl);
          await insertDataset(c, record);
          this.datasets.set(name, {
            record,
            fields: new Map(),
            known: emptyKnown(),
            nextSeq: 0n,
            lock: new SharedLock(),
            version: 0,
            schemaVersion: ++this.schemaSeq,
            inputBytes: 0,
          });
          return { ...record };
        }),
      );
    });
  }

  async updateDataset(
    name: string,
    patch: { description?: string; retentionDays?: number; useRetentionPeriod?: boolean },
    mayShorten = true,
  ): Promise<DatasetRecord> {
    const d = this.state(name);
    return this.alone(d, async () => {
      const retention =
        patch.retentionDays === undefined && patch.useRetentionPeriod === undefined
          ? { retentionDays: d.record.retentionDays, useRetentionPeriod: d.record.useRetentionPeriod }
          : checkRetention(patch.retentionDays, patch.useRetentionPeriod);
      // Checked against the retention now, under the dataset's lock: 0 keeps events forever.
      const before = this.retentionDays(d.record);
      const after = this.retentionDays({ ...d.record, ...retention });
      if (!mayShorten && after > 0 && (before === 0 || after < before))
        throw new StoreError(
          'forbidden',
          `a retention of ${after} days (now ${before === 0 ? 'forever' : `${before} days`}) deletes the older events of dataset "${name}": it takes the trim|update or data|delete capability on it`,
        );
      const record: DatasetRecord = {
        ...d.record,
        description: patch.description ?? d.record.description,
        ...retention,
        updatedAt: new Date().toISOString(),
      };
      await this.db.use((c) => updateDataset(c, record));
      d.record = record;
      return { ...record };
    });
  }

  async deleteDataset(name: string): Promise<void> {
    const d = this.state(name);
    await this.catalogLock.run(() =>
      this.alone(d, async () => {
        d.schemaChanging = true;
        try {
          await this.db.use((c) =>
            c.transaction(async () => {
              await c.run(`DROP TABLE IF EXISTS ${sqlIdent(d.record.table)}`);
              for (const t of Object.values(metricsTables(d.record.table)))
                await c.run(`DROP TABLE IF EXISTS ${sqlIdent(t)}`);
              await deleteDatasetRows(c, name);
            }),
          );
          this.datasets.delete(name);
        } finally {
          d.schemaChanging = false;
        }
      }),
    );
  }

  /** Deletes events older than now - maxAgeNs. Returns how many were deleted. */
  async trim(name: string, maxAgeNs: bigint): Promise<number> {
    if (maxAgeNs < 0n) throw invalid('maxDuration must not be negative');
    const d = this.state(name);
    return this.alone(d, () => this.deleteOlderThan(d, this.now() - maxAgeNs));
  }

  private async deleteOlderThan(d: DatasetState, cutoffNs: bigint): Promise<number> {
    // A cutoff before the earliest time an event can have (a duration of ages) deletes nothing.
    if (cutoffNs <= -(2n ** 63n)) return 0;
    d.version++;
    if (d.record.kind === METRICS_KIND) {
      // A metrics dataset's points, by their whole seconds.
      const seconds = cutoffNs / 1_000_000_000n - (cutoffNs % 1_000_000_000n < 0n ? 1n : 0n);
      return this.db.changes(`DELETE FROM ${sqlIdent(metricsTables(d.record.table).points)} WHERE t < ${seconds}`);
    }
    return this.db.changes(`DELETE FROM ${sqlIdent(d.record.table)} WHERE _time < make_timestamp_ns(${cutoffNs})`);
  }

  /** Effective retention of a dataset in days (0 = forever). */
  retentionDays(record: DatasetRecord): number {
    return record.useRetentionPeriod ? record.retentionDays : this.opts.defaultRetentionDays;
  }

  /** Applies every dataset's retention once; the retention task calls this on a timer. */
  async enforceRetention(): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const d of [...this.datasets.values()]) {
      const days = this.retentionDays(d.record);
      if (days <= 0 || !this.datasets.has(d.record.name)) continue;
      const n = await d.lock.run(async () =>
        this.isLive(d) ? this.deleteOlderThan(d, this.now() - BigInt(days) * NS_PER_DAY) : 0,
      );
      if (n > 0) deleted[d.record.name] = n;
    }
    return deleted;
  }

  // ---- fields and map fields --------------------------------------------------------------------------

  listFields(name: string): FieldRecord[] {
    return [...this.state(name).fields.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  getField(dataset: string, field: string): FieldRecord {
    const f = this.state(dataset).fields.get(field);
    if (!f) throw notFound(`field "${field}" of dataset "${dataset}"`);
    return { ...f };
  }

  async updateFieldMeta(
    dataset: string,
    field: string,
    patch: { description?: string; unit?: string; hidden?: boolean },
  ): Promise<FieldRecord> {
    const d = this.state(dataset);
    return this.alone(d, async () => {
      const f = d.fields.get(field);
      if (!f) throw notFound(`field "${field}" of dataset "${dataset}"`);
      const next = {
        ...f,
        description: patch.description ?? f.description,
        unit: patch.unit ?? f.unit,
        hidden: patch.hidden ?? f.hidden,
      };
      await this.db.use((c) => updateField(c, dataset, next));
      d.fields.set(field, next);
      return { ...next };
    });
  }

  async setMapFields(dataset: string, names: string[]): Promise<string[]> {
    for (const n of names) {
      if (typeof n !== 'string' || !MAP_FIELD_NAME.test(n)) throw invalid(`invalid map field name "${n}"`);
    }
    if (new Set(names).size !== names.length) throw invalid('duplicate map field names');
    const d = this.state(dataset);
    return this.alone(d, async () => {
      const record = { ...d.record, mapFields: [...names], updatedAt: new Date().toISOString() };
      await this.db.use((c) => updateDataset(c, record));
      d.record = record;
      // Paths under a new map field must stop being flattened: forget the cached shape.
      d.known = emptyKnown();
      return [...record.mapFields];
    });
  }

  async addMapField(dataset: string, name: string): Promise<void> {
    const current = this.state(dataset).record.mapFields;
    if (current.includes(name)) throw conflict(`map field "${name}" already exists in dataset "${dataset}"`);
    await this.setMapFields(dataset, [...current, name]);
  }

  async removeMapField(dataset: string, name: string): Promise<void> {
    const current = this.state(dataset).record.mapFields;
    if (!current.includes(name)) throw notFound(`map field "${name}" of dataset "${dataset}"`);
    await this.setMapFields(
      dataset,
      current.filter((n) => n !== name),
    );
  }

  // ---- ingest -----------------------------------------------------------------------------------------

  /** A fresh path for an ingest body file, inside the data dir so DuckDB reads it from the same disk. */
  tempFile(ext: string): string {
    // The one directory DuckDB may read (see db.ts lockDown), under names nobody can guess.
    return join(this.tempDir, 'spool', `ingest-${randomUUID()}.${ext}`);
  }

  /**
   * Loads a body file of events into a dataset.
   * @param format ndjson: one JSON value per line (blank lines skipped); array: one JSON array.
   */
  async ingestFile(
    dataset: string,
    file: string,
    format: 'ndjson' | 'array',
    options: IngestOptions = {},
  ): Promise<IngestResult> {
    const d = this.state(dataset);
    if (d.record.kind === METRICS_KIND)
      throw invalid(
        `dataset "${dataset}" is a metrics dataset (kind ${METRICS_KIND}): it takes OTLP metrics at /v1/metrics (header x-axiom-metrics-dataset), not events`,
      );
    if (options.timestampFormat) {
      try {
        checkTimestampFormat(options.timestampFormat);
      } catch (e) {
        throw invalid((e as Error).message);
      }
    }
    // DuckDB's array reader takes `[{"a":1},` (a body cut short) as one event: refuse it whole, as any
    // array that does not parse.
    if (format === 'array' && !(await endsWithByte(file, 0x5d)))
      throw invalid('invalid JSON body: the JSON array is not closed with "]" (a truncated body?)');
    const receivedNs = this.now();
    const bytes = (await stat(file)).size;
    const progress: { inserted: boolean; stored?: boolean } = { inserted: false };
    const counted = () => {
      // Some events stored, even if what follows the insert fails: the body's bytes count.
      if (!progress.stored) return;
      d.inputBytes += bytes;
      d.inputDirty = true;
    };
    const result = await this.ingestPool
      .use(async (c) => {
        try {
          return await this.ingestOnce(c, d, file, format, options, receivedNs, progress);
        } catch (e) {
          // Appending to a dataset keeps a block per column pinned in memory until a checkpoint writes it
          // out, which the WAL's size alone does not call for: a few wide datasets fill memory_limit. A
          // batch refused for memory before it was inserted is tried once more after a checkpoint.
          if (progress.inserted || !isOutOfMemory(e)) throw e;
          await this.checkpoint(true).catch(() => undefined); // what it could not fold, the retry says
          try {
            return await this.ingestOnce(c, d, file, format, options, receivedNs, progress);
          } catch (again) {
            // Nothing of it was stored: the client is told to send it in smaller parts (the agent splits on 413).
            if (progress.inserted || !isOutOfMemory(again)) throw again;
            throw new StoreError(
              'too_large',
              `the batch for dataset "${dataset}" needs more memory than service.memory_limit leaves it; nothing of it was stored: send it in smaller requests`,
            );
          }
        }
      })
      .catch((e: unknown) => {
        counted();
        throw e;
      });
    counted();
    return result;
  }

  private async ingestOnce(
    c: ConnOps,
    d: DatasetState,
    file: string,
    format: 'ndjson' | 'array',
    options: IngestOptions,
    receivedNs: bigint,
    progress: { inserted: boolean; stored?: boolean },
  ): Promise<IngestResult> {
    const source =
      format === 'array'
        ? `read_json_objects(${sqlString(file)}, format = 'array', maximum_object_size = ${this.opts.maxObjectBytes})`
        : `read_json_objects(${sqlString(file)}, format = 'newline_delimited', ignore_errors = true, maximum_object_size = ${this.opts.maxObjectBytes})`;
    try {
      await c.run(`CREATE OR REPLACE TEMP TABLE raw AS SELECT json AS j FROM ${source}`);
    } catch (e) {
      const msg = (e as Error).message;
      // Only a parse error is the client's fault; anything else (memory, disk) is ours and stays a 500.
      if (/Invalid Input Error|Malformed JSON|JSON/i.test(msg) && !isOutOfMemory(e) && !/IO Error/i.test(msg)) {
        throw invalid(`invalid JSON body: ${firstLine(msg).replace(/ in file "[^"]*"/, ' in the body')}`); // the spool file's path is ours
      }
      throw e;
    }
    try {
      if (options.facts?.dataKey !== false) await c.run(UNGROUP_SQL);
      return await this.loadRaw(c, d, receivedNs, options, progress);
    } finally {
      await c.run('DROP TABLE IF EXISTS raw');
    }
  }

  private async loadRaw(
    c: ConnOps,
    d: DatasetState,
    receivedNs: bigint,
    options: IngestOptions,
    progress: { inserted: boolean; stored?: boolean },
  ): Promise<IngestResult> {
    const opts: PlanOptions = {
      timestampField: options.timestampField || undefined,
      timestampFormat: options.timestampFormat || undefined,
      labels: options.labels ?? {},
      mapFields: new Set(d.record.mapFields),
    };
    const shape = new BatchShape(d.known, opts);
    const first = shape.firstQuery();
    shape.absorb(first, await c.all(first.sql), true);
    for (let q = shape.nextQuery(); q; q = shape.nextQuery()) shape.absorb(q, await c.all(q.sql), false);
    if (options.facts?.longDigitRun !== false) await this.widenOverflowingIntegers(c, shape);

    const { total, malformed, notObject } = shape.counts;
    const objects = total - malformed - notObject;
    const inserted = objects === 0 ? 0 : await this.insertBatch(c, d, shape, opts, receivedNs);
    progress.inserted = true;
    if (inserted > 0) {
      progress.stored = true;
      this.maybeCheckpoint();
    }
    const failed = total - inserted;
    const failures = failed > 0 ? await this.listFailures(c, opts, receivedNs) : [];
    const collisionsSql = inserted > 0 ? collisionsQuery(shape) : undefined;
    const collisions = collisionsSql ? Number((await c.all(collisionsSql))[0]?.n ?? 0) : 0;
    return { ingested: inserted, failed, failures, collisions };
  }

  /**
   * Appends the batch while holding the dataset's lock shared, so batches of one dataset insert in
   * parallel (two connections append a third more than one: docs/benchmarks.md). A batch that
   * needs new or wider columns first changes the schema holding the lock alone, then plans again.
   */
  private async insertBatch(
    c: ConnOps,
    d: DatasetState,
    shape: BatchShape,
    opts: PlanOptions,
    receivedNs: bigint,
  ): Promise<number> {
    for (;;) {
      const inserted = await d.lock.shared(async () => {
        this.checkLive(d);
        const plan = planColumns(shape, d.fields, opts, () => '');
        if (plan.added.length > 0 || plan.widened.length > 0) return undefined;
        // Taken before the insert runs: concurrent batches get disjoint ranges in arrival order.
        const seqBase = d.nextSeq;
        d.nextSeq += BigInt(shape.counts.total);
        const mixedRoots = shape.counts.malformed + shape.counts.notObject > 0;
        const n = await c.changes(insertSql(d.record.table, plan, opts, receivedNs, seqBase, mixedRoots));
        d.version++;
        return n;
      });
      if (inserted !== undefined) {
        shape.remember(d.known);
        return inserted;
      }
      await d.lock.run(() => this.extendSchema(c, d, shape, opts));
    }
  }

  /** Holding the dataset's lock alone: adds and widens the columns the batch needs, in one transaction. */
  /**
   * json_type() calls every non-negative integer UBIGINT, so an integer past int64 (a uint64 id, 2^63) is
   * typed integer and its BIGINT cast would store null. A batch whose text holds a run of 19 digits is
   * asked which integer paths overflow; those are stored as floats, as a JSON parser would read them.
   */
  private async widenOverflowingIntegers(c: ConnOps, shape: BatchShape): Promise<void> {
    const ints = [...shape.leaves.values()].filter((l) => l.type === 'integer');
    if (ints.length === 0) return;
    const long = await c.all(`SELECT 1 FROM raw WHERE regexp_matches(j::VARCHAR, '[0-9]{19}') LIMIT 1`);
    if (long.length === 0) return;
    const checks = ints.map((l, i) => {
      const p = sqlString(l.ptr);
      return `bool_or(json_type(j, ${p}) = 'UBIGINT' AND TRY_CAST(json_extract_string(j, ${p}) AS BIGINT) IS NULL) AS o${i}`;
    });
    const [row] = await c.all(`SELECT ${checks.join(', ')} FROM raw`);
    ints.forEach((l, i) => {
      if (row?.[`o${i}`] === true) l.type = 'float';
    });
  }

  private async extendSchema(c: ConnOps, d: DatasetState, shape: BatchShape, opts: PlanOptions): Promise<void> {
    this.checkLive(d);
    let nextCol = d.record.nextColumn;
    const plan = planColumns(shape, d.fields, opts, () => `f${nextCol++}`);
    if (plan.added.length === 0 && plan.widened.length === 0) return; // another batch did it meanwhile
    if (d.fields.size + plan.added.length > this.opts.maxFieldsPerDataset) {
      throw invalid(
        `dataset "${d.record.name}" would have ${d.fields.size + plan.added.length} fields, more than the limit of ${this.opts.maxFieldsPerDataset} (service.max_fields_per_dataset)`,
      );
    }
    const record = { ...d.record, nextColumn: nextCol };
    d.schemaChanging = true;
    try {
      await c.transaction(async () => {
        const table = sqlIdent(d.record.table);
        for (const f of plan.added)
          await c.run(`ALTER TABLE ${table} ADD COLUMN ${sqlIdent(f.column)} ${SQL_TYPE[f.type]}`);
        for (const f of plan.widened)
          await c.run(`ALTER TABLE ${table} ALTER COLUMN ${sqlIdent(f.column)} SET DATA TYPE ${SQL_TYPE[f.type]}`);
        for (const f of plan.added)
          await insertField(c, d.record.name, { ...f, description: '', unit: '', hidden: false });
        for (const f of plan.widened) await updateField(c, d.record.name, { ...d.fields.get(f.name)!, type: f.type });
        if (plan.added.length > 0) await updateDataset(c, record);
      });
    } finally {
      d.schemaChanging = false;
    }
    // Committed: publish the new schema.
    d.version++;
    for (const f of plan.added) d.fields.set(f.name, { ...f, description: '', unit: '', hidden: false });
    for (const f of plan.widened) d.fields.set(f.name, { ...d.fields.get(f.name)!, type: f.type });
    d.record = record;
    d.schemaVersion = ++this.schemaSeq;
  }

  /** A dataset deleted while a request for it waited must not be written to: it answers 404. */
  private checkLive(d: DatasetState): void {
    if (!this.isLive(d)) throw notFound(`dataset "${d.record.name}"`);
  }

  private isLive(d: DatasetState): boolean {
    return this.datasets.get(d.record.name) === d;
  }

  /** Runs `fn` holding the dataset's lock alone, once it is known to be still there. */
  private alone<T>(d: DatasetState, fn: () => Promise<T>): Promise<T> {
    return d.lock.run(() => {
      this.checkLive(d);
      return fn();
    });
  }

  private async listFailures(c: ConnOps, opts: PlanOptions, receivedNs: bigint): Promise<IngestFailure[]> {
    const timestamp = formatRfc3339Nano(receivedNs);
    const rows = await c.all(failuresSql(opts));
    const timeField = opts.timestampField || '_time';
    return rows.map((r) => {
      const n = Number(r.rid) + 1;
      let error: string;
      if (r.jt == null) error = `event ${n}: invalid JSON`;
      else if (r.jt !== 'OBJECT') error = `event ${n}: expected a JSON object, got ${String(r.jt).toLowerCase()}`;
      else
        error = `event ${n}: cannot parse ${timeField} value ${JSON.stringify(r.tv)}${opts.timestampFormat ? ` with format "${opts.timestampFormat}"` : ''}`;
      return { timestamp, error };
    });
  }

  // ---- reads ------------------------------------------------------------------------------------------

  /**
   * Which schema of a dataset a reader sees, read before its schema(). A reader whose statements ran while
   * schemaUnchanged() held saw no column of another type than its schema said, nor a row needing a field
   * its schema lacked.
   */
  schemaVersion(dataset: string): number | undefined {
    return this.datasets.get(dataset)?.schemaVersion;
  }

  schemaUnchanged(dataset: string, seen: number | undefined): boolean {
    const d = this.datasets.get(dataset);
    return d?.schemaVersion === seen && !d?.schemaChanging;
  }

  /**
   * Runs `fn` while no schema of these datasets changes (appends go on beside it): a query's last run, so
   * that fields arriving without end cannot leave its rows without theirs. Taken in name order.
   */
  async withSchemasHeld<T>(datasets: Iterable<string>, fn: () => Promise<T>): Promise<T> {
    const locks = [...new Set(datasets)].sort().flatMap((name) => {
      const d = this.datasets.get(name);
      return d ? [d.lock] : [];
    });
    const hold = (i: number): Promise<T> => (i === locks.length ? fn() : locks[i]!.shared(() => hold(i + 1)));
    return hold(0);
  }

  /** Resolves once the schema changes under way on these datasets are published. */
  async schemaSettled(datasets: Iterable<string>): Promise<void> {
    for (const name of datasets) await this.datasets.get(name)?.lock.shared(() => Promise.resolve());
  }

  /** The physical table and field→column map of a dataset, for the query engine. */
  schema(dataset: string): { table: string; kind: string; fields: SchemaField[] } {
    const d = this.state(dataset);
    return {
      table: d.record.table,
      kind: d.record.kind,
      fields: [...d.fields.values()].map(({ name, column, type }) => ({ name, column, type })),
    };
  }

  /** Reads events ordered by time (then by ingest order), inclusive [start, end]. */
  async readEvents(dataset: string, o: ReadOptions = {}): Promise<StoredEvent[]> {
    const { table, fields } = this.schema(dataset);
    const where: string[] = [];
    if (o.startNs !== undefined) where.push(`_time >= make_timestamp_ns(${clampNs(o.startNs)})`);
    if (o.endNs !== undefined) where.push(`_time <= make_timestamp_ns(${clampNs(o.endNs)})`);
    if (o.match) {
      const f = fields.find((x) => x.name === o.match!.field && x.type === 'string');
      if (!f) return [];
      where.push(`${sqlIdent(f.column)} = ${sqlString(o.match.value)}`);
    }
    const dir = o.order === 'asc' ? 'ASC' : 'DESC';
    const cols = [
      'epoch_ns(_time) AS "_t"',
      'epoch_ns(_sysTime) AS "_st"',
      '_seq',
      ...fields.map((f) => `${sqlIdent(f.column)}`),
    ];
    const sql = `SELECT ${cols.join(', ')} FROM ${sqlIdent(table)} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY _time ${dir}, _seq ${dir} ${o.limit !== undefined ? `LIMIT ${Math.max(0, Math.floor(o.limit))}` : ''}`;
    // A read as a query is: a checkpoint waits for it (see checkpointGate).
    const giveUp = this.giveUpWaiting(undefined);
    const rows = await this.checkpointGate
      .shared(() => this.queryPool.use((c) => c.all(sql), giveUp.promise))
      .finally(giveUp.cancel);
    return rows.map((r) => toEvent(r, fields));
  }

  /**
   * Runs a read-only query (compiled APL) and returns its columns, column-major; see ConnOps.columns. A
   * wait for a checkpoint (see checkpointGate) counts in `timeoutMs`.
   */
  async readColumns(sql: string, timeoutMs?: number, maxBytes?: number, rowShare?: number): Promise<unknown[][]> {
    if (this.readsStopped) throw new ServiceStopping();
    // Said at once, not after a wait for a checkpoint that waits for the reopening.
    this.db.refuseWhileReopening();
    const started = Date.now();
    // A statement its caller is answered for while it runs on lets go of the gate then: the checkpoint
    // does not run while such a statement does (see checkpoint), and holds no read back for it.
    const release = await this.enterQueryGate(timeoutMs);
    try {
      if (this.readsStopped) throw new ServiceStopping();
      const left = () => (timeoutMs === undefined ? undefined : Math.max(1, timeoutMs - (Date.now() - started)));
      // A wait for a connection (the others running long queries) counts in the time too.
      const waiting = this.giveUpWaiting(left());
      try {
        return await this.queryPool.use(async (c) => {
          this.activeReads.add(c);
          try {
            return await c.columns(sql, left(), maxBytes, rowShare);
          } catch (e) {
            if (this.readsStopped) throw new ServiceStopping();
            throw e;
          } finally {
            this.activeReads.delete(c);
          }
        }, waiting.promise);
      } finally {
        waiting.cancel();
      }
    } finally {
      release();
    }
  }

  /** Fails once `timeoutMs` passes (QueryTimeout) or reads stop (ServiceStopping); `cancel` when done waiting. */
  private giveUpWaiting(timeoutMs: number | undefined): { promise: Promise<never>; cancel: () => void } {
    let fail!: (e: Error) => void;
    const promise = new Promise<never>((_, reject) => (fail = reject));
    promise.catch(() => undefined);
    if (this.readsStopped) fail(new ServiceStopping());
    this.onReadsStop.add(fail);
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => fail(new QueryTimeout(timeoutMs)), timeoutMs);
    return {
      promise,
      cancel: () => {
        clearTimeout(timer);
        this.onReadsStop.delete(fail);
      },
    };
  }

  /**
   * Takes the checkpoint gate shared; fails with QueryTimeout once `timeoutMs` passes waiting for it, and
   * with ServiceStopping when the service stops meanwhile.
   */
  private async enterQueryGate(timeoutMs: number | undefined): Promise<() => void> {
    const entering = this.checkpointGate.enter(false);
    const giveUp = this.giveUpWaiting(timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : undefined);
    try {
      return await Promise.race([entering, giveUp.promise]);
    } catch (e) {
      // Let go as soon as it is granted, so the queue behind it moves on.
      void entering.then((release) => release());
      throw e;
    } finally {
      giveUp.cancel();
    }
  }

  /** Keeps a dataset for the service itself: no token writes or changes it, and no other takes its name in any case. */
  reserveSystemDataset(name: string): void {
    this.systemDatasets.add(name.toLowerCase());
  }

  /** Whether a name is a system dataset's (or takes the reserved prefix), in any case. */
  isSystemDataset(name: string): boolean {
    return this.systemDatasets.has(name.toLowerCase()) || hasReservedPrefix(name);
  }

  /**
   * On shutdown: interrupts the queries running and refuses new ones, so a long query cannot hold the
   * service up (ingest and catalog work finish as usual).
   */
  stopReads(): void {
    this.readsStopped = true;
    for (const stop of this.onReadsStop) stop(new ServiceStopping());
    this.onReadsStop.clear();
    for (const c of this.activeReads) c.interrupt(new ServiceStopping());
  }

  /** Rows and time bounds of a whole dataset, cached until its next write. */
  private async tableStats(d: DatasetState): Promise<{ rows: number; minNs?: bigint; maxNs?: bigint }> {
    if (d.stats && d.stats.version === d.version) return d.stats;
    const version = d.version;
    // A metrics dataset's rows are its points, their times whole seconds.
    const sql =
      d.record.kind === METRICS_KIND
        ? `SELECT count(*) AS n, min(t) * 1000000000 AS lo, max(t) * 1000000000 AS hi FROM ${sqlIdent(metricsTables(d.record.table).points)}`
        : `SELECT count(*) AS n, epoch_ns(min(_time)) AS lo, epoch_ns(max(_time)) AS hi FROM ${sqlIdent(d.record.table)}`;
    const r = (await this.db.all(sql))[0]!;
    const stats = {
      version,
      rows: Number(r.n),
      minNs: r.lo === null || r.lo === undefined ? undefined : BigInt(r.lo as bigint),
      maxNs: r.hi === null || r.hi === undefined ? undefined : BigInt(r.hi as bigint),
    };
    // A write that committed meanwhile bumped the version: the figures are then not cached.
    if (d.version === version) d.stats = stats;
    return stats;
  }

  /**
   * Rows, time bounds and row groups of the datasets within an inclusive time range (query statistics).
   * A range that covers a dataset's whole time span takes the cached whole-table figures, so a query over
   * all the data does not scan it twice. A range's count is a read of the query's, within `timeoutMs`.
   */
  async examine(
    datasets: string[],
    startNs?: bigint,
    endNs?: bigint,
    timeoutMs?: number,
  ): Promise<{ rows: number; minNs?: bigint; maxNs?: bigint; blocks: number; coversAll: boolean; versions: number[] }> {
    let coversAll = true;
    const versions = datasets.map((ds) => this.state(ds).version);
    let rows = 0;
    let blocks = 0;
    let minNs: bigint | undefined;
    let maxNs: bigint | undefined;
    for (const ds of datasets) {
      const d = this.state(ds);
      let part = await this.tableStats(d);
      const covers =
        part.rows === 0 ||
        ((startNs === undefined || startNs <= part.minNs!) && (endNs === undefined || endNs >= part.maxNs!));
      if (!covers) {
        coversAll = false;
        const where: string[] = [];
        if (startNs !== undefined) where.push(`_time >= make_timestamp_ns(${startNs})`);
        if (endNs !== undefined) where.push(`_time <= make_timestamp_ns(${endNs})`);
        const [[n], [lo], [hi]] = (await this.readColumns(
          `SELECT count(*) AS n, epoch_ns(min(_time)) AS lo, epoch_ns(max(_time)) AS hi FROM ${sqlIdent(d.record.table)} WHERE ${where.join(' AND ')}`,
          timeoutMs,
        )) as [[bigint | number], [bigint | number | null], [bigint | number | null]];
        part = {
          rows: Number(n),
          minNs: lo === null || lo === undefined ? undefined : BigInt(lo),
          maxNs: hi === null || hi === undefined ? undefined : BigInt(hi),
        };
      }
      rows += part.rows;
      // DuckDB stores rows in groups of 122,880: the unit a scan reads.
      blocks += Math.ceil(part.rows / 122_880);
      if (part.minNs !== undefined && (minNs === undefined || part.minNs < minNs)) minNs = part.minNs;
      if (part.maxNs !== undefined && (maxNs === undefined || part.maxNs > maxNs)) maxNs = part.maxNs;
    }
    return { rows, minNs, maxNs, blocks, coversAll, versions };
  }

  /**
   * The longest value (bytes) of each of a dataset's columns named, from DuckDB's statistics (a column it
   * keeps none for is measured), cached until the dataset's next write. A read of the query's, within
   * `timeoutMs`.
   */
  async longestValues(dataset: string, columns: readonly string[], timeoutMs?: number): Promise<Map<string, number>> {
    const d = this.state(dataset);
    if (d.longest?.version !== d.version) d.longest = { version: d.version, bytes: new Map() };
    const known = d.longest.bytes;
    const missing = [...new Set(columns)].filter((c) => !known.has(c));
    if (missing.length > 0) {
      const stats = await this.readColumns(statsSql(d.record.table, missing), timeoutMs);
      const unknown: string[] = [];
      missing.forEach((c, i) => {
        // No row: an empty table holds no text.
        const text = stats[i]?.[0];
        const bytes = text === undefined ? 0 : longestInStats(String(text));
        if (bytes === undefined) unknown.push(c);
        else known.set(c, bytes);
      });
      if (unknown.length > 0) {
        const measured = await this.readColumns(measureSql(d.record.table, unknown), timeoutMs);
        unknown.forEach((c, i) => known.set(c, Number(measured[i]?.[0] ?? 0)));
      }
    }
    return new Map(columns.map((c) => [c, known.get(c) ?? 0]));
  }

  /** Whether no write reached these datasets since examine() returned these versions. */
  unchangedSince(datasets: string[], versions: number[]): boolean {
    return datasets.every((ds, i) => this.hasDataset(ds) && this.state(ds).version === versions[i]);
  }

  /**
   * Runs `fn` on the dataset's record holding its lock shared, as an ingest does: a deletion waits for it,
   * and one that came first makes it a 404 (service/metrics/metrics-store.ts).
   */
  withDataset<T>(name: string, fn: (record: DatasetRecord) => Promise<T>): Promise<T> {
    const d = this.state(name);
    return d.lock.shared(async () => {
      this.checkLive(d);
      return fn({ ...d.record });
    });
  }

  /** Events, time span and bytes of a dataset (GET /v1/datasets/{id}/info). */
  async info(dataset: string): Promise<DatasetInfo> {
    const d = this.state(dataset);
    try {
      const stats = await this.tableStats(d);
      return {
        numEvents: stats.rows,
        minNs: stats.minNs,
        maxNs: stats.maxNs,
        inputBytes: d.inputBytes,
        compressedBytes: await this.storageBytes(d),
      };
    } catch (e) {
      // Deleted meanwhile: its table went with it.
      if (this.datasets.get(dataset) !== d) throw notFound(`dataset "${dataset}"`);
      throw e;
    }
  }

  /**
   * The dataset's share of the database file, estimated: in each block, its segments span from one's offset
   * to the next's, and the last as far as the table's mean segment (no further than the block's end), plus
   * whole overflow blocks; rows still only in the WAL count at the dataset's bytes per row in blocks (or,
   * before it has any, at the bytes received per event).
   */
  private async storageBytes(d: DatasetState): Promise<number> {
    const { version } = d;
    const checkpoint = this.checkpoints;
    const cached = d.storage;
    if (cached && cached.checkpoint === checkpoint && (cached.version === version || Date.now() < cached.until))
      return cached.bytes;
    let bytes: number;
    let segments: number;
    if (d.record.kind === METRICS_KIND) {
      // Its series' and points' tables; a point takes about 6 bytes once checkpointed, a series some hundred.
      const t = metricsTables(d.record.table);
      const sizes = await Promise.all([this.tableBytes(t.points, 0, 6), this.tableBytes(t.series, 0, 100)]);
      bytes = sizes[0].bytes + sizes[1].bytes;
      segments = sizes[0].segments + sizes[1].segments;
    } else ({ bytes, segments } = await this.tableBytes(d.record.table, d.inputBytes));
    const until = segments >= STORAGE_WALK_LONG ? Date.now() + STORAGE_WALK_STANDS_MS : 0;
    if (this.checkpoints === checkpoint) d.storage = { version, checkpoint, bytes, until };
    return bytes;
  }

  /**
   * A write another part made (a metrics dataset's export, once committed): it changes the dataset's
   * statistics, its bytes count as received, and the WAL it grew may call for a checkpoint.
   */
  noteWrite(dataset: string, bytes: number): void {
    this.maybeCheckpoint();
    const d = this.datasets.get(dataset);
    if (!d) return;
    d.version++;
    d.inputBytes += bytes;
    d.inputDirty = true;
  }

  /**
   * One table's share of the database file, estimated (storageBytes says how), and its segments; rows not
   * yet in blocks count at the table's bytes per row, or at `rowBytes` before it has any.
   */
  private async tableBytes(
    table: string,
    inputBytes: number,
    rowBytes?: number,
  ): Promise<{ bytes: number; segments: number }> {
    const r = (
      await this.db.all(
        `WITH seg AS (
           SELECT block_id AS b, block_offset AS o, len(additional_block_ids) AS extra, persistent AS p,
             column_id = 0 AND segment_type <> 'VALIDITY' AS t, count AS n
           FROM pragma_storage_info(${sqlString(table)})),
         spans AS (
           SELECT b, lead(o) OVER (PARTITION BY b ORDER BY o) - o AS span, o FROM seg WHERE p AND b >= 0),
         blocks AS (SELECT b, max(o) AS last, sum(span) AS measured, count(span) AS spans FROM spans GROUP BY b)
         SELECT
           (SELECT block_size FROM pragma_database_size() LIMIT 1) AS block_size,
           (SELECT count(*) FROM seg) AS segments,
           (SELECT coalesce(sum(extra), 0) FROM seg WHERE p AND b >= 0) AS extra,
           (SELECT coalesce(sum(n) FILTER (WHERE p), 0) FROM seg WHERE t) AS written,
           (SELECT coalesce(sum(n) FILTER (WHERE NOT p), 0) FROM seg WHERE t) AS pending,
           (SELECT coalesce(sum(measured), 0) FROM blocks) AS measured,
           (SELECT coalesce(sum(spans), 0) FROM blocks) AS spans,
           (SELECT list(last) FROM blocks) AS lasts`,
      )
    )[0]!;
    const blockSize = Number(r.block_size ?? 262_144);
    const written = Number(r.written);
    const pending = Number(r.pending);
    const measured = Number(r.measured);
    const spans = Number(r.spans);
    const lasts = ((r.lasts as unknown[] | null) ?? []).map(Number);
    const received = rowBytes ?? inputBytes / Math.max(1, written + pending);
    // Without a measured segment (a table of one segment), the last one is bounded by what its rows came as.
    const mean = spans > 0 ? measured / spans : received * written;
    let bytes = Number(r.extra) * blockSize + measured;
    for (const last of lasts) bytes += Math.min(blockSize - last, mean);
    if (pending > 0) bytes += pending * (written > 0 ? bytes / written : received);
    return { bytes: Math.round(bytes), segments: Number(r.segments) };
  }

  /** Writes the received byte counts that changed since the last write. */
  private flushInputBytes(): Promise<void> {
    return this.catalogLock.run(() => this.writeInputBytes());
  }

  /** Holding the catalog lock (no dataset is created or deleted meanwhile). */
  private async writeInputBytes(): Promise<void> {
    const dirty = [...this.datasets.entries()].filter(([, d]) => d.inputDirty);
    if (dirty.length === 0) return;
    for (const [, d] of dirty) d.inputDirty = false;
    try {
      await this.db.use((c) =>
        c.transaction(() => saveInputBytes(c, new Map(dirty.map(([name, d]) => [name, d.inputBytes])))),
      );
    } catch (e) {
      for (const [, d] of dirty) d.inputDirty = true;
      throw e;
    }
  }

  async count(dataset: string): Promise<number> {
    const { table } = this.schema(dataset);
    const rows = await this.db.all(`SELECT count(*) AS n FROM ${sqlIdent(table)}`);
    return Number(rows[0]!.n);
  }
}

/** Whether the file's last byte other than JSON whitespace is `byte`. */
async function endsWithByte(file: string, byte: number): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const tail = Buffer.alloc(Math.min(size, 4096));
    for (let end = size; end > 0;) {
      const start = Math.max(0, end - tail.length);
      await fh.read(tail, 0, end - start, start);
      for (let i = end - start - 1; i >= 0; i--) {
        const b = tail[i]!;
        if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return b === byte;
      }
      end = start;
    }
    return false;
  } finally {
    await fh.close();
  }
}

function toEvent(r: Row, fields: SchemaField[]): StoredEvent {
  const ev: StoredEvent = {
    _time: formatRfc3339Nano(r._t as bigint),
    _sysTime: formatRfc3339Nano(r._st as bigint),
    _rowId: String(r._seq),
  };
  for (const f of fields) {
    const v = r[f.column];
    if (v === null || v === undefined) continue;
    ev[f.name] = jsValue(v, f.type);
  }
  return ev;
}

/** A stored value as JSON would carry it. Integers beyond 2^53 lose precision, as in any JSON client. */
export function jsValue(v: unknown, type: FieldType): unknown {
  if (typeof v === 'bigint') return Number(v);
  if ((type === 'array' || type === 'map[string]') && typeof v === 'string') return parseJsonText(v);
  return v;
}

function checkRetention(
  days: number | undefined,
  use: boolean | undefined,
): { retentionDays: number; useRetentionPeriod: boolean } {
  const retentionDays = days ?? 0;
  const useRetentionPeriod = use ?? false;
  if (!Number.isInteger(retentionDays) || retentionDays < 0)
    throw invalid('retentionDays must be a whole number of days, 0 or more');
  if (useRetentionPeriod && retentionDays === 0)
    throw invalid('retentionDays must be greater than 0 when useRetentionPeriod is true');
  return { retentionDays, useRetentionPeriod };
}

function emptyKnown(): KnownPaths {
  return { objects: new Set(['']), leaves: new Set() };
}

function firstLine(s: string): string {
  return s.split('\n')[0]!.slice(0, 500);
}

export { StoreError };
export type { DatasetRecord, FieldRecord, FieldType };
