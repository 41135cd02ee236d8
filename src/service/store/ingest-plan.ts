/**
 * Planning of one ingest batch: which JSON paths an event batch holds, which fields and columns they map to,
 * and the SQL that discovers them and loads them. Pure functions over strings and plain data; the event
 * store runs the SQL.
 *
 * Paths are JSON pointers ("/geo/city"), which name any key exactly, including keys with dots, slashes or
 * letters that differ only in case (DuckDB's own identifiers are case-insensitive, so fields live in
 * physical columns f1, f2, ... mapped by the catalog).
 */
import { SQL_TYPE, TYPE_BIT, type FieldType, typeFromBits, typeOfJsValue, widen } from './field-types.js';
import { sqlString, timeExpression } from './time-sql.js';

/** Top-level names reserved by the service; ingested fields with these names are renamed _user_<name>. */
export const RESERVED_NAMES = new Set(['_blockInfo', '_cursor', '_rowID', '_source', '_sysTime']);
/** Objects nested deeper than this are stored as JSON text in one field instead of being flattened. */
export const MAX_DEPTH = 100;
/** At most this many failures are listed in an ingest response; `failed` still counts all of them. */
export const MAX_LISTED_FAILURES = 1000;

export function escapePointerSegment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function pointerSegments(ptr: string): string[] {
  if (ptr === '') return [];
  return ptr.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The field name of a path: segments joined by dots, reserved top-level names renamed. */
export function fieldNameOf(ptr: string, timePointers: readonly string[]): string {
  const segs = pointerSegments(ptr);
  if (segs.length === 1) {
    const top = segs[0]!;
    if (RESERVED_NAMES.has(top)) return `_user_${top.slice(1)}`;
    // With timestamp-field set, an event's own _time is kept as an ordinary field.
    if (top === '_time' && !timePointers.includes('/_time')) return '_user_time';
  }
  return segs.join('.');
}

/** What the store remembers about a dataset between batches (a cache: losing it costs one extra round). */
export interface KnownPaths {
  objects: Set<string>; // pointers seen holding objects (always includes '' = the event itself)
  leaves: Set<string>; // pointers seen holding a non-object value
}

export interface SchemaField {
  name: string;
  column: string;
  type: FieldType;
}

export interface PlanOptions {
  timestampField?: string;
  timestampFormat?: string;
  /** Flattened labels (field name → value) added to every event. */
  labels: Record<string, unknown>;
  mapFields: ReadonlySet<string>;
}

export function timePointers(timestampField?: string): string[] {
  if (!timestampField || timestampField === '_time') return ['/_time'];
  const direct = `/${escapePointerSegment(timestampField)}`;
  const nested = timestampField.includes('.')
    ? `/${timestampField.split('.').map(escapePointerSegment).join('/')}`
    : undefined;
  return nested ? [direct, nested] : [direct];
}

function sqlList(items: readonly string[]): string {
  return `[${items.map(sqlString).join(', ')}]`;
}

/** The time value of an event: the first of the time pointers that holds something. */
function timeValue(timePtrs: readonly string[]): string {
  return timePtrs.length === 1 ? 'v[1]' : `COALESCE(${timePtrs.map((_, i) => `v[${i + 1}]`).join(', ')})`;
}

export interface DiscoveryQuery {
  sql: string;
  objects: string[];
  leaves: string[];
}

/**
 * One discovery round, grouped by (root type, key sets): most batches have a handful of distinct key sets,
 * so the result is a few rows. Each row carries the type bits of every leaf within its group. Two JSON
 * parses per event: json_type over [root, leaves...] and json_keys over the objects.
 */
export function discoveryQuery(objects: string[], leaves: string[]): DiscoveryQuery {
  const agg = leaves.map((_, i) => `bit_or(ferry_tbit(ts[${i + 2}])) AS t${i}`);
  const sql = `SELECT ts[1] AS jt, ks, count(*) AS n${agg.length ? `, ${agg.join(', ')}` : ''}
    FROM (SELECT json_type(j, ${sqlList(['', ...leaves])}) AS ts, json_keys(j, ${sqlList(objects)}) AS ks FROM raw)
    GROUP BY ALL`;
  return { sql, objects, leaves };
}

export const TBIT_MACRO = `CREATE OR REPLACE MACRO ferry_tbit(t) AS CASE t
  WHEN 'VARCHAR' THEN ${TYPE_BIT.string} WHEN 'BIGINT' THEN ${TYPE_BIT.integer} WHEN 'UBIGINT' THEN ${TYPE_BIT.integer}
  WHEN 'DOUBLE' THEN ${TYPE_BIT.float} WHEN 'BOOLEAN' THEN ${TYPE_BIT.boolean} WHEN 'ARRAY' THEN ${TYPE_BIT.array}
  WHEN 'OBJECT' THEN ${TYPE_BIT.object} ELSE 0 END`;

/** What one leaf pointer holds in this batch. */
export interface LeafInfo {
  ptr: string;
  field: string;
  type: FieldType;
  /** The same pointer also holds objects in some events (flattened separately); extract scalars only. */
  alsoObject: boolean;
}

/**
 * Accumulates discovery rounds. Feed it each round's row; it says which pointers still need a round.
 */
export class BatchShape {
  readonly leaves = new Map<string, LeafInfo>();
  readonly objects = new Set<string>(['']);
  private pendingObjects: string[] = [];
  private pendingLeaves: string[] = [];
  counts = { total: 0, malformed: 0, notObject: 0 };

  constructor(private readonly known: KnownPaths, private readonly opts: PlanOptions) {}

  /**
   * Round one asks for the keys of every known object and the types of every known path, objects included:
   * a path that held an object before may hold a scalar now. Known objects count as asked, so a batch
   * shaped like the previous ones needs this one round.
   */
  firstQuery(): DiscoveryQuery {
    const knownObjects = [...this.known.objects].filter((o) => o !== '');
    for (const o of knownObjects) this.objects.add(o);
    return discoveryQuery(['', ...knownObjects], [...new Set([...this.known.leaves, ...knownObjects])]);
  }

  nextQuery(): DiscoveryQuery | undefined {
    if (this.pendingObjects.length === 0 && this.pendingLeaves.length === 0) return undefined;
    const objects = this.pendingObjects.length ? this.pendingObjects : [''];
    const q = discoveryQuery(objects, this.pendingLeaves);
    this.pendingObjects = [];
    this.pendingLeaves = [];
    return q;
  }

  /** Takes one round's grouped rows (ks = keys under each object, t<i> = type bits of leaves[i]). */
  absorb(q: DiscoveryQuery, rows: Record<string, unknown>[], first: boolean): void {
    const timePtrs = timePointers(this.opts.timestampField);
    const bits = new Array<number>(q.leaves.length).fill(0);
    const keys = q.objects.map(() => new Set<string>());
    let total = 0;
    let malformed = 0;
    let notObject = 0;
    for (const row of rows) {
      const n = Number(row.n);
      total += n;
      if (row.jt == null) malformed += n;
      else if (row.jt !== 'OBJECT') notObject += n;
      else {
        q.leaves.forEach((_, i) => (bits[i]! |= Number(row[`t${i}`] ?? 0)));
        const ks = (row.ks as (string[] | null)[] | null) ?? [];
        ks.forEach((list, i) => list?.forEach((k) => keys[i]!.add(k)));
      }
    }
    if (first) this.counts = { total, malformed, notObject };
    q.leaves.forEach((ptr, i) => this.classify(ptr, bits[i]!));
    q.objects.forEach((obj, i) => {
      for (const key of keys[i]!) {
        const ptr = `${obj}/${escapePointerSegment(key)}`;
        if (ptr === '/_time' && timePtrs.includes(ptr)) continue; // the event time itself, not a field
        if (this.leaves.has(ptr) || this.objects.has(ptr) || q.leaves.includes(ptr) || this.known.leaves.has(ptr)) continue;
        if (!this.pendingLeaves.includes(ptr)) this.pendingLeaves.push(ptr);
      }
    });
  }

  private classify(ptr: string, bits: number): void {
    const timePtrs = timePointers(this.opts.timestampField);
    const field = fieldNameOf(ptr, timePtrs);
    const depth = pointerSegments(ptr).length;
    const isMap = this.opts.mapFields.has(field);
    const hasObject = (bits & TYPE_BIT.object) !== 0;
    let type = typeFromBits(bits & ~TYPE_BIT.object);
    if (isMap) {
      if (bits !== 0) this.leaves.set(ptr, { ptr, field, type: 'map[string]', alsoObject: false });
      return;
    }
    if (hasObject && depth >= MAX_DEPTH) {
      // Too deep to flatten: the object is kept as its JSON text.
      type = widen(type, 'string');
      this.leaves.set(ptr, { ptr, field, type, alsoObject: false });
      return;
    }
    if (type) this.leaves.set(ptr, { ptr, field, type, alsoObject: hasObject });
    if (hasObject && !this.objects.has(ptr)) {
      this.objects.add(ptr);
      this.pendingObjects.push(ptr);
    }
  }

  /** The pointers this batch holds, to remember for the next batch. */
  remember(into: KnownPaths): void {
    for (const o of this.objects) into.objects.add(o);
    for (const l of this.leaves.keys()) into.leaves.add(l);
  }
}

/** The column plan of a batch against the dataset's current schema. */
export interface ColumnPlan {
  /** Fields new to the dataset, with the column they get. */
  added: SchemaField[];
  /** Existing fields whose column must widen. */
  widened: SchemaField[];
  /** Every field the batch writes, in insert order, with how its value is computed. */
  writes: { column: string; expr: string }[];
}

/**
 * Decides the columns for a batch.
 * @param nextColumn allocates a new physical column name.
 */
export function planColumns(
  shape: BatchShape,
  schema: ReadonlyMap<string, SchemaField>,
  opts: PlanOptions,
  nextColumn: () => string,
): ColumnPlan {
  const leafPtrs = [...shape.leaves.keys()];
  const offset = timePointers(opts.timestampField).length; // v holds the time pointers first
  const byField = new Map<string, { type: FieldType; exprs: string[] }>();
  leafPtrs.forEach((ptr, i) => {
    const leaf = shape.leaves.get(ptr)!;
    const raw = leaf.type === 'map[string]' ? `json_extract(j, ${sqlString(ptr)})` : `v[${offset + i + 1}]`;
    const value = leaf.alsoObject ? `CASE WHEN json_type(j, ${sqlString(ptr)}) = 'OBJECT' THEN NULL ELSE ${raw} END` : raw;
    const entry = byField.get(leaf.field);
    if (entry) {
      entry.type = widen(entry.type, leaf.type);
      entry.exprs.push(value);
    } else byField.set(leaf.field, { type: leaf.type, exprs: [value] });
  });
  for (const [key, value] of Object.entries(opts.labels)) {
    // Labels are top-level fields, so the reserved names are renamed as an event's own would be.
    const name = fieldNameOf(`/${escapePointerSegment(key)}`, []);
    const t = typeOfJsValue(value);
    if (t === undefined) continue;
    const literal = t === 'array' || t === 'string' && typeof value !== 'string' ? JSON.stringify(value) : String(value);
    // A label replaces the event's own value of the same field.
    const prev = byField.get(name);
    byField.set(name, { type: prev ? widen(prev.type, t) : t, exprs: [sqlString(literal)] });
  }

  const added: SchemaField[] = [];
  const widened: SchemaField[] = [];
  const writes: { column: string; expr: string }[] = [];
  for (const [name, { type, exprs }] of byField) {
    const existing = schema.get(name);
    let field: SchemaField;
    if (!existing) {
      field = { name, column: nextColumn(), type };
      added.push(field);
    } else {
      const t = widen(existing.type, type);
      field = { ...existing, type: t };
      if (t !== existing.type) widened.push(field);
    }
    const value = exprs.length === 1 ? exprs[0]! : `COALESCE(${exprs.join(', ')})`;
    writes.push({ column: field.column, expr: castTo(value, field.type) });
  }
  return { added, widened, writes };
}

function castTo(value: string, type: FieldType): string {
  switch (type) {
    case 'string': return `CAST(${value} AS VARCHAR)`;
    case 'map[string]': return `CAST(${value} AS JSON)`;
    default: return `TRY_CAST(${value} AS ${SQL_TYPE[type]})`;
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Columns every insert and failure query reads from `raw(j)`: row id, time value(s) and leaf values. */
function extracted(timePtrs: readonly string[], leafPtrs: readonly string[], withRootType: boolean, format?: string): string {
  const t = timeExpression(timeValue(timePtrs), format);
  const inner = `SELECT rowid AS rid, j, json_extract_string(j, ${sqlList([...timePtrs, ...leafPtrs])}) AS v FROM raw`;
  return `SELECT *, ${timeValue(timePtrs)} AS tv, ${t} AS t${withRootType ? ', json_type(j) AS jt' : ''} FROM (${inner})`;
}

/**
 * The INSERT that loads every good event of the batch.
 * @param mixedRoots discovery saw lines that are not objects, so the root type must be checked per row.
 */
export function insertSql(
  table: string,
  shape: BatchShape,
  plan: ColumnPlan,
  opts: PlanOptions,
  receivedNs: bigint,
  seqBase: bigint,
  mixedRoots: boolean,
): string {
  const timePtrs = timePointers(opts.timestampField);
  const recv = `make_timestamp_ns(${receivedNs})`;
  const cols = ['_time', '_sysTime', '_seq', ...plan.writes.map((w) => w.column)].map(quoteIdent);
  const exprs = [`COALESCE(t, ${recv})`, recv, `${seqBase} + rid`, ...plan.writes.map((w) => w.expr)];
  return `INSERT INTO ${quoteIdent(table)} (${cols.join(', ')})
    SELECT ${exprs.join(',\n      ')}
    FROM (${extracted(timePtrs, [...shape.leaves.keys()], mixedRoots, opts.timestampFormat)})
    WHERE ${mixedRoots ? "jt = 'OBJECT' AND " : ''}NOT (tv IS NOT NULL AND t IS NULL)`;
}

/** Lists the events that failed, for the response's `failures` (a slow path, run only when some failed). */
export function failuresSql(opts: PlanOptions): string {
  const timePtrs = timePointers(opts.timestampField);
  return `SELECT rid, jt, tv FROM (${extracted(timePtrs, [], true, opts.timestampFormat)})
    WHERE jt IS NULL OR jt <> 'OBJECT' OR (tv IS NOT NULL AND t IS NULL)
    ORDER BY rid LIMIT ${MAX_LISTED_FAILURES}`;
}
