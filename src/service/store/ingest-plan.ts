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
import { sqlIdent, sqlText } from '../../sql/quote.js';
import { timeExpression } from '../../sql/time.js';
import { invalid } from './errors.js';

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
  return ptr
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** What an empty key is called in a field name (`{"a":{"":1}}` is field `a._empty`). */
export const EMPTY_KEY_NAME = '_empty';

/** The field name of a path: segments joined by dots, empty keys named, reserved top-level names renamed. */
export function fieldNameOf(ptr: string, timePointers: readonly string[]): string {
  const segs = pointerSegments(ptr).map((s) => (s === '' ? EMPTY_KEY_NAME : s));
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

export interface DiscoveryQuery {
  sql: string;
  /**
   * keys: lists the keys under each of `objects` (grouped by key set).
   * counts: only counts them, to compare with how many of their known children the events hold.
   */
  mode: 'keys' | 'counts';
  objects: string[];
  /** Paths whose types are asked (t0, t1, ... in the result). */
  leaves: string[];
}

/** The pointer of the object holding a path ('' for a top-level key). */
function parentOf(ptr: string): string {
  return ptr.slice(0, ptr.lastIndexOf('/'));
}

/**
 * A discovery round that lists keys, grouped by (root type, key sets): most batches have a handful of
 * distinct key sets, so the result is a few rows. Each row carries the type bits of every leaf within its
 * group. Two JSON parses per event: json_type over [root, leaves...] and json_keys over the objects.
 */
export function discoveryQuery(objects: string[], leaves: string[]): DiscoveryQuery {
  const agg = leaves.map((_, i) => `bit_or(ferry_tbit(ts[${i + 2}])) AS t${i}`);
  const sql = `SELECT ts[1] AS jt, ks, count(*) AS n${agg.length ? `, ${agg.join(', ')}` : ''}
    FROM (SELECT json_type(j, ${sqlList(['', ...leaves])}) AS ts, json_keys(j, ${sqlList(objects)}) AS ks FROM raw)
    GROUP BY ALL`;
  return { sql, mode: 'keys', objects, leaves };
}

/**
 * A discovery round for a batch expected to look like the previous ones: types of the known paths, and for
 * each known object its number of keys (k<i>) next to the number of its known children present (c<i>).
 * Equal sums mean no event brought a new key there, so no key lists are built or hashed; a difference
 * sends that object to a `keys` round. `countOnly` paths (the event time) are counted but not typed.
 */
/**
 * `a + b + c + …` as a balanced tree: DuckDB refuses expressions deeper than 1000, which a chain over the
 * children of an object with a thousand keys is.
 */
function balancedSum(terms: readonly string[]): string {
  if (terms.length === 1) return terms[0]!;
  const mid = terms.length >> 1;
  return `(${balancedSum(terms.slice(0, mid))} + ${balancedSum(terms.slice(mid))})`;
}

export function countsQuery(objects: string[], leaves: string[], countOnly: string[]): DiscoveryQuery {
  const paths = [...leaves, ...countOnly];
  const agg = leaves.map((_, i) => `, bit_or(ferry_tbit(ts[${i + 2}])) AS t${i}`);
  const counts = objects.map((o, i) => {
    const present = paths.flatMap((p, k) => (parentOf(p) === o ? [`count(ts[${k + 2}])`] : []));
    return `, sum(nk[${i + 1}]) AS k${i}, ${present.length ? balancedSum(present) : '0'} AS c${i}`;
  });
  const sql = `SELECT ts[1] AS jt, count(*) AS n${agg.join('')}${counts.join('')}
    FROM (SELECT json_type(j, ${sqlList(['', ...paths])}) AS ts, [len(x) for x in json_keys(j, ${sqlList(objects)})] AS nk FROM raw)
    GROUP BY ALL`;
  return { sql, mode: 'counts', objects, leaves };
}

/**
 * The type bit of a json_type() name ('NULL', a JSON null, has none). A list lookup rather than a CASE:
 * DuckDB plans every copy of a macro's body, and a CASE of seven arms per path doubles the counts round's
 * planning time for no faster run (docs/benchmarks.md).
 */
export const TBIT_MACRO = `CREATE OR REPLACE MACRO ferry_tbit(t) AS
  [${TYPE_BIT.string}, ${TYPE_BIT.integer}, ${TYPE_BIT.integer}, ${TYPE_BIT.float}, ${TYPE_BIT.boolean}, ${TYPE_BIT.array}, ${TYPE_BIT.object}]
  [list_position(['VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE', 'BOOLEAN', 'ARRAY', 'OBJECT'], t)]`;

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
  /** Some event holds a key twice in one object (json_keys lists it twice): its first value is stored. */
  sawDuplicateKeys = false;

  /** The dataset's known paths as this batch began: a concurrent batch extends the shared set meanwhile. */
  private readonly known: KnownPaths;

  constructor(
    known: KnownPaths,
    private readonly opts: PlanOptions,
  ) {
    // A snapshot, so every round of this batch's discovery sees the same known paths: reading the live set,
    // a key another batch made known between two rounds was neither asked for in the first round nor
    // discovered in the next, and the batch was stored without its values.
    this.known = { objects: new Set(known.objects), leaves: new Set(known.leaves) };
  }

  /**
   * Round one asks for the types of every known path, objects included (a path that held an object before
   * may hold a scalar now), and checks every known object for keys not seen before. Known objects count as
   * asked, so a batch shaped like the previous ones needs this one round. A dataset with no known fields
   * lists its keys at once.
   */
  firstQuery(): DiscoveryQuery {
    const knownObjects = [...this.known.objects].filter((o) => o !== '');
    for (const o of knownObjects) this.objects.add(o);
    const typed = [...new Set([...this.known.leaves, ...knownObjects])];
    if (this.known.leaves.size === 0) return discoveryQuery(['', ...knownObjects], typed);
    // `_time` read as the event time is the one key that is not a field: counted so that its presence is
    // not taken for a new key. A timestamp-field is a field like any other, typed and discovered as such.
    const timeOnly = timePointers(this.opts.timestampField).filter((p) => p === '/_time' && !typed.includes(p));
    return countsQuery(['', ...knownObjects], typed, timeOnly);
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
        if (ks.some((list) => list !== null && new Set(list).size !== list.length)) this.sawDuplicateKeys = true;
      }
    }
    if (first) this.counts = { total, malformed, notObject };
    q.leaves.forEach((ptr, i) => this.classify(ptr, bits[i]!));
    if (q.mode === 'counts') {
      this.checkKeyCounts(q, rows, bits);
      return;
    }
    q.objects.forEach((obj, i) => {
      for (const key of keys[i]!) {
        const ptr = `${obj}/${escapePointerSegment(key)}`;
        if (ptr === '/_time' && timePtrs.includes(ptr)) continue; // the event time itself, not a field
        if (this.leaves.has(ptr) || this.objects.has(ptr) || q.leaves.includes(ptr) || this.known.leaves.has(ptr))
          continue;
        if (!this.pendingLeaves.includes(ptr)) this.pendingLeaves.push(ptr);
      }
    });
  }

  /**
   * Sends to a keys round every object whose key count differs from its known children's. An object that
   * was an array in some event is sent too: a pointer like /a/0 finds an array's element, which json_keys
   * does not count, so the sums could balance an unseen key.
   */
  private checkKeyCounts(q: DiscoveryQuery, rows: Record<string, unknown>[], bits: number[]): void {
    const row = rows.find((r) => r.jt === 'OBJECT');
    if (!row) return;
    q.objects.forEach((obj, i) => {
      const wasArray = obj !== '' && (bits[q.leaves.indexOf(obj)]! & TYPE_BIT.array) !== 0;
      const unseenKeys = Number(row[`k${i}`] ?? 0) !== Number(row[`c${i}`] ?? 0);
      if ((wasArray || unseenKeys) && !this.pendingObjects.includes(obj)) this.pendingObjects.push(obj);
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

  /**
   * Fields that several paths of this batch name (`{"a.b":1,"a":{"b":2}}`), with those paths in the order
   * their values are preferred: the fewest levels of nesting first (the key that holds the dots itself).
   */
  sharedFields(): LeafInfo[][] {
    const byField = new Map<string, LeafInfo[]>();
    for (const leaf of this.leaves.values()) byField.set(leaf.field, [...(byField.get(leaf.field) ?? []), leaf]);
    return [...byField.values()].filter((l) => l.length > 1).map(preferred);
  }

  /** The pointers this batch holds, to remember for the next batch. */
  remember(into: KnownPaths): void {
    for (const o of this.objects) into.objects.add(o);
    for (const l of this.leaves.keys()) into.leaves.add(l);
  }
}

/** One column a batch writes: from the event's values at some paths (COALESCEd in order), or a label. */
export interface ColumnWrite {
  column: string;
  type: FieldType;
  sources: LeafInfo[];
  /** A label's value (as text), written to every event instead of the sources. */
  label?: string;
}

/** The column plan of a batch against the dataset's current schema. */
export interface ColumnPlan {
  /** Fields new to the dataset, with the column they get. */
  added: SchemaField[];
  /** Existing fields whose column must widen. */
  widened: SchemaField[];
  /** Every field the batch writes, in insert order. */
  writes: ColumnWrite[];
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
  const byField = new Map<string, { type: FieldType; sources: LeafInfo[]; label?: string }>();
  for (const leaf of shape.leaves.values()) {
    const entry = byField.get(leaf.field);
    if (entry) {
      entry.type = widen(entry.type, leaf.type);
      entry.sources.push(leaf);
    } else byField.set(leaf.field, { type: leaf.type, sources: [leaf] });
  }
  for (const [key, value] of Object.entries(opts.labels)) {
    // Labels are top-level fields, so the reserved names are renamed as an event's own would be.
    const name = fieldNameOf(`/${escapePointerSegment(key)}`, []);
    const t = typeOfJsValue(value);
    if (t === undefined) continue;
    const label =
      t === 'array' || (t === 'string' && typeof value !== 'string') ? JSON.stringify(value) : String(value);
    // A label replaces the event's own value of the same field.
    const prev = byField.get(name);
    byField.set(name, { type: prev ? widen(prev.type, t) : t, sources: [], label });
  }

  const added: SchemaField[] = [];
  const widened: SchemaField[] = [];
  const writes: ColumnWrite[] = [];
  for (const [name, { type, sources, label }] of byField) {
    preferred(sources);
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
    writes.push({ column: field.column, type: field.type, sources, label });
  }
  return { added, widened, writes };
}

function castTo(value: string, type: FieldType): string {
  switch (type) {
    case 'string':
      return `CAST(${value} AS VARCHAR)`;
    case 'map[string]':
      return `CAST(${value} AS JSON)`;
    default:
      return `TRY_CAST(${value} AS ${SQL_TYPE[type]})`;
  }
}

/**
 * A SQL string of text an ingest brings (a field's JSON pointer, a label, a spool file's path). A NUL would
 * name a key DuckDB's JSON functions cannot reach, so it is refused rather than written as chr(0).
 */
export function sqlString(s: string): string {
  if (s.includes('\u0000')) {
    throw invalid('field names, labels and timestamp-format may not contain the NUL character (U+0000)');
  }
  return sqlText(s);
}

/** Paths nested deeper than this are extracted one by one rather than through the struct. */
const STRUCT_MAX_DEPTH = 32;

/**
 * Reads an event's values at many paths with one JSON parse: json_transform(j, spec) builds a struct `s`
 * whose fields follow the paths, each already of its column's type. Fields are reached by position
 * (struct_extract_at), because DuckDB matches struct field names case-insensitively and events may hold
 * keys that differ only in case. A path that must also be an object in the struct (it is the prefix of
 * another path) is extracted on its own instead.
 */
class StructReader {
  private readonly root: SpecNode = { children: new Map() };
  private readonly planned = new Map<string, string>();

  /** Plans paths before any is read; a path asked twice keeps its first type. */
  want(ptr: string, sqlType: string): void {
    if (!this.planned.has(ptr)) this.planned.set(ptr, sqlType);
  }

  /** Builds the struct from the planned paths; returns the SQL of `s`, or undefined if it is empty. */
  build(): string | undefined {
    const prefixes = new Set<string>();
    for (const ptr of this.planned.keys()) {
      for (let i = ptr.lastIndexOf('/'); i > 0; i = ptr.lastIndexOf('/', i - 1)) prefixes.add(ptr.slice(0, i));
    }
    const clashes = caseClashes([...this.planned.keys()]);
    for (const [ptr, sqlType] of this.planned) {
      const segs = pointerSegments(ptr);
      // A struct field needs a name: a path through an empty key is read on its own (a JSON pointer can name it).
      if (prefixes.has(ptr) || segs.length > STRUCT_MAX_DEPTH || clashes(ptr) || segs.includes('')) continue;
      let node = this.root;
      for (const seg of segs) {
        let child = node.children.get(seg);
        if (!child) node.children.set(seg, (child = { children: new Map() }));
        node = child;
      }
      node.type = sqlType;
    }
    return this.root.children.size ? `json_transform(j, ${sqlString(specJson(this.root))})` : undefined;
  }

  /** The SQL reading a path as `sqlType`, or undefined if the path is not in the struct with that type. */
  read(ptr: string): { sql: string; sqlType: string } | undefined {
    let node = this.root;
    let sql = 's';
    for (const seg of pointerSegments(ptr)) {
      const keys = [...node.children.keys()];
      const child = node.children.get(seg);
      if (!child) return undefined;
      sql = `struct_extract_at(${sql}, ${keys.indexOf(seg) + 1})`;
      node = child;
    }
    return node.type && node.children.size === 0 ? { sql, sqlType: node.type } : undefined;
  }
}

/**
 * Which paths run through keys that differ from a sibling only in case. DuckDB's optimizer may rewrite a
 * positional struct access into one by name, and names match case-insensitively, so such keys stay out of
 * the struct (seen with DuckDB 1.5: {"Level","level"} read "INFO" twice under a projection).
 */
function caseClashes(ptrs: readonly string[]): (ptr: string) => boolean {
  const fold = (seg: string) => seg.toUpperCase().toLowerCase();
  const seen = new Map<string, string>(); // parent pointer + folded key → the exact key first seen
  const clashing = new Set<string>();
  const levels = (ptr: string) => {
    let parent = '';
    return pointerSegments(ptr).map((seg) => {
      const level = { id: `${parent}\u0000${fold(seg)}`, seg };
      parent += `/${escapePointerSegment(seg)}`;
      return level;
    });
  };
  for (const ptr of ptrs) {
    for (const { id, seg } of levels(ptr)) {
      const first = seen.get(id);
      if (first === undefined) seen.set(id, seg);
      else if (first !== seg) clashing.add(id);
    }
  }
  return (ptr) => clashing.size > 0 && levels(ptr).some(({ id }) => clashing.has(id));
}

interface SpecNode {
  children: Map<string, SpecNode>;
  type?: string;
}

/** The json_transform structure text, written by hand so keys keep their order (JS objects put "1" first). */
function specJson(node: SpecNode): string {
  if (node.children.size === 0) return JSON.stringify(node.type);
  return `{${[...node.children].map(([k, child]) => `${JSON.stringify(k)}:${specJson(child)}`).join(',')}}`;
}

/** The SQL type a leaf's value is read as in the struct; undefined for leaves read on their own. */
function structType(leaf: LeafInfo, fieldType: FieldType): string | undefined {
  if (leaf.type === 'map[string]' || leaf.alsoObject) return undefined;
  return SQL_TYPE[fieldType];
}

/** A leaf's value as its column's type. */
function leafValue(leaf: LeafInfo, fieldType: FieldType, reader: StructReader): string {
  const ptr = sqlString(leaf.ptr);
  if (leaf.type === 'map[string]') return castTo(`json_extract(j, ${ptr})`, fieldType);
  if (leaf.alsoObject) {
    return castTo(
      `CASE WHEN json_type(j, ${ptr}) = 'OBJECT' THEN NULL ELSE json_extract_string(j, ${ptr}) END`,
      fieldType,
    );
  }
  const read = reader.read(leaf.ptr);
  if (!read) return castTo(`json_extract_string(j, ${ptr})`, fieldType);
  return read.sqlType === SQL_TYPE[fieldType] ? read.sql : castTo(read.sql, fieldType);
}

/** The event time's raw value: the first of the time pointers that holds something, as text. */
function timeText(timePtrs: readonly string[], reader?: StructReader): string {
  const values = timePtrs.map((p) => reader?.read(p)?.sql ?? `json_extract_string(j, ${sqlString(p)})`);
  return values.length === 1 ? values[0]! : `COALESCE(${values.join(', ')})`;
}

/**
 * The rows every insert and failure query reads from `raw(j)`: row id, the struct `s` of values, the time
 * value `tv` and its timestamp `t`, and the root's JSON type `jt` when asked.
 */
function extracted(
  timePtrs: readonly string[],
  reader: StructReader | undefined,
  withRootType: boolean,
  format?: string,
): string {
  const struct = reader?.build();
  const inner = `SELECT rowid AS rid, j${struct ? `, ${struct} AS s` : ''} FROM raw`;
  const tv = timeText(timePtrs, struct ? reader : undefined);
  return `SELECT *, ${tv} AS tv, ${timeExpression(tv, format)} AS t${withRootType ? ', json_type(j) AS jt' : ''} FROM (${inner})`;
}

/**
 * The INSERT that loads every good event of the batch.
 * @param mixedRoots discovery saw lines that are not objects, so the root type must be checked per row.
 */
export function insertSql(
  table: string,
  plan: ColumnPlan,
  opts: PlanOptions,
  receivedNs: bigint,
  seqBase: bigint,
  mixedRoots: boolean,
): string {
  const timePtrs = timePointers(opts.timestampField);
  const reader = new StructReader();
  // The time pointers first: a field at the same path is then read as text and cast, as the time is.
  for (const p of timePtrs) reader.want(p, 'VARCHAR');
  for (const w of plan.writes) {
    for (const leaf of w.sources) {
      const t = structType(leaf, w.type);
      if (t) reader.want(leaf.ptr, t);
    }
  }
  const rows = extracted(timePtrs, reader, mixedRoots, opts.timestampFormat);
  const values = plan.writes.map((w) =>
    w.label !== undefined
      ? castTo(sqlString(w.label), w.type)
      : w.sources.length === 1
        ? leafValue(w.sources[0]!, w.type, reader)
        : `COALESCE(${w.sources.map((l) => leafValue(l, w.type, reader)).join(', ')})`,
  );
  const recv = `make_timestamp_ns(${receivedNs})`;
  const cols = ['_time', '_sysTime', '_seq', ...plan.writes.map((w) => w.column)].map(sqlIdent);
  const exprs = [`COALESCE(t, ${recv})`, recv, `${seqBase} + rid`, ...values];
  return `INSERT INTO ${sqlIdent(table)} (${cols.join(', ')})
    SELECT ${exprs.join(',\n      ')}
    FROM (${rows})
    WHERE ${mixedRoots ? "jt = 'OBJECT' AND " : ''}NOT (tv IS NOT NULL AND t IS NULL)`;
}

/** Lists the events that failed, for the response's `failures` (a slow path, run only when some failed). */
export function failuresSql(opts: PlanOptions): string {
  const timePtrs = timePointers(opts.timestampField);
  return `SELECT rid, jt, tv FROM (${extracted(timePtrs, undefined, true, opts.timestampFormat)})
    WHERE jt IS NULL OR jt <> 'OBJECT' OR (tv IS NOT NULL AND t IS NULL)
    ORDER BY rid LIMIT ${MAX_LISTED_FAILURES}`;
}

/** Orders the paths naming one field as their values are preferred: fewest levels first, then by pointer. */
function preferred(sources: LeafInfo[]): LeafInfo[] {
  const depth = (l: LeafInfo) => pointerSegments(l.ptr).length;
  return sources.sort((a, b) => depth(a) - depth(b) || (a.ptr < b.ptr ? -1 : a.ptr > b.ptr ? 1 : 0));
}

/**
 * Counts the events in which two inputs named one field and one value was set aside: a key held twice in
 * one object (`objects` are the batch's object pointers), or several paths of one field holding values.
 * Undefined when the batch can have none (no query needed).
 */
export function collisionsQuery(shape: BatchShape): string | undefined {
  const conds: string[] = [];
  if (shape.sawDuplicateKeys) {
    const objects = [...shape.objects];
    conds.push(`list_bool_or([len(k) != len(list_distinct(k)) for k in json_keys(j, ${sqlList(objects)})])`);
  }
  for (const leaves of shape.sharedFields()) {
    const present = leaves.map(
      (l) => `(coalesce(json_type(j, ${sqlString(l.ptr)}), 'NULL') NOT IN ('NULL', 'OBJECT'))::INT`,
    );
    conds.push(`${present.join(' + ')} > 1`);
  }
  if (conds.length === 0) return undefined;
  return `SELECT count(*) AS n FROM raw WHERE json_type(j) = 'OBJECT' AND (${conds.map((c) => `coalesce(${c}, false)`).join(' OR ')})`;
}
