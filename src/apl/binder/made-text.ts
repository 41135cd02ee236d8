/**
 * The text a query's functions may make, estimated before it runs.
 *
 * DuckDB computes a batch of rows at a time, and every call in a batch's expressions holds its values for
 * the whole batch until the next one; the text those values hold is not counted against memory_limit.
 * Thirteen `strcat`s of a 5.5 KB text sixteen times over held 1.1 MB a row, and `strrep(s, 1024)` over
 * 2,048 such rows took 11 GB before its time ran out (docs/benchmarks.md). So each call that returns a
 * text or a dynamic value is given the most bytes its value may hold, from its arguments' (a column as
 * read: its longest value, which DuckDB's statistics keep; a catalog entry's madeBytes where the function
 * can make more than its arguments hold together), and counted for the rows a batch may hold there.
 *
 * What a call adds beyond its longest argument always counts. The copy it makes of that argument counts
 * once the column it comes from has been copied FREE_COPIES times in the statement: a few copies of a
 * column hold a few times what the batch's own values of it hold, however long its longest value, so a
 * long value somewhere in a dataset does not refuse `extract`, `tolower` or `parse_json` over it, while
 * thirty nested `tolower`s count. A constant argument is held once, not a row: a call copying one counts.
 *
 * Not estimated: the lists a summary makes (`make_list` and the like: their length depends on the
 * groups), and the arrays of make-series; text made from them counts only what the call adds to them.
 * Pure: the caller looks the columns' lengths up.
 */
import type { SizedArg } from '../functions/catalog.js';
import { JSON_QUOTING, SCALAR_TEXT_BYTES, together } from '../functions/made-bytes.js';
import { OPERATORS } from '../functions/operators.js';
import { SCALAR_FUNCTIONS } from '../functions/scalar.js';
import type { AplType } from '../types.js';
import type { BExpr, BoundStage } from './bound.js';

/** Rows DuckDB computes together (its vector size): what a batch's calls hold at once. */
export const BATCH_ROWS = 2048;

/** The longest value (bytes) of a dataset's column as stored. */
export type LengthOf = (dataset: string, physical: string) => number;

export interface MadeText {
  /** Bytes the calls may make for a batch of rows. */
  batch: number;
  /** Bytes calls over constants make once (DuckDB computes them as it plans). */
  once: number;
  /** The call that may add the most to a row, for the message. */
  largest?: { fn: string; pos: number; bytes: number };
  /** Calls whose value grows with a count read from the rows, each counted at the row share. */
  shared: { fn: string; pos: number }[];
}

/** Bytes a text call may add beyond what its arguments hold: a separator, a number written out. */
const CALL_OVERHEAD = 16;

/** Copies of a column's values a statement makes before they count. */
export const FREE_COPIES = 4;

/** What a size stands for when no finite number does (a NaN count): more than any limit. */
const UNBOUNDED = 2 ** 53;

/** Aggregations whose value is one of the values they read (arg_max# and arg_min#: arg_max's columns). */
const PICKS = new Set([
  'min',
  'max',
  'minif',
  'maxif',
  'any',
  'anyif',
  'take_any',
  'arg_max#',
  'arg_min#',
  'percentile',
  'percentileif',
]);

/** Functions whose value changes from row to row whatever their arguments. */
const VOLATILE = new Set(['rand', 'new_guid']);

/**
 * A value's size: the most bytes it may hold, and the column as read it is a copy of, if any, with that
 * column's own longest value.
 */
interface Size {
  bytes: () => number;
  origin?: { key: string; bytes: () => number };
}
type Env = Map<string, Size>;

const fixedSize = (n: number): Size => ({ bytes: () => n });
const SCALAR = fixedSize(SCALAR_TEXT_BYTES);
const NONE = fixedSize(0);
const isText = (t: AplType) => t === 'string' || t === 'dynamic';

/** `f`, computed on first use and kept. */
function memo(f: () => number): () => number {
  let v: number | undefined;
  return () => (v ??= f());
}

function literalBytes(e: Extract<BExpr, { k: 'lit' }>): number {
  if (e.value === null) return 0;
  if (typeof e.value === 'string') return Buffer.byteLength(e.value);
  if (e.type === 'dynamic') return Buffer.byteLength(JSON.stringify(e.value) ?? '');
  return SCALAR_TEXT_BYTES;
}

/** DuckDB computes a call over constants once, as it plans. */
function isConstant(e: BExpr): boolean {
  if (e.k === 'lit') return true;
  if (e.k !== 'call') return false;
  // Kept per node: each call asks it of its subtree, and the row share's search walks the query again.
  let known = constants.get(e);
  if (known === undefined) constants.set(e, (known = !VOLATILE.has(e.fn) && e.args.every(isConstant)));
  return known;
}

const constants = new WeakMap<BExpr, boolean>();

/** A column of a union: as long as the longest of its inputs', a copy of all their columns as read. */
function unionOf(sizes: Size[]): Size {
  const bytes = memo(() => Math.max(0, ...sizes.map((s) => s.bytes())));
  const origins = sizes.map((s) => s.origin);
  if (origins.some((o) => o === undefined)) return { bytes };
  const longest = memo(() => Math.max(0, ...origins.map((o) => o!.bytes())));
  return { bytes, origin: { key: origins.map((o) => o!.key).join('\u0001'), bytes: longest } };
}

/** A size as a count: a NaN or an infinity is more than any limit. */
const finite = (n: number) => (Number.isFinite(n) ? Math.max(0, n) : UNBOUNDED);

/**
 * The text the stages' calls may make (a union's and a join's inputs included, which run in the same
 * statement), with `rowShare` bytes a row for each call whose value grows with a count read from the rows
 * (what their SQL lets a row make; see ../../sql/row-share.ts).
 */
export function madeText(stages: BoundStage[], lengthOf: LengthOf, rowShare = 0): MadeText {
  const estimate = new Estimate(lengthOf, rowShare);
  estimate.stages(stages);
  return { batch: estimate.batch, once: estimate.once, largest: estimate.largest, shared: estimate.shared };
}

class Estimate {
  batch = 0;
  once = 0;
  largest: MadeText['largest'];
  readonly shared: MadeText['shared'] = [];
  /** The size of one element of an array a call makes, where less than the whole (range's numbers). */
  private readonly elements = new WeakMap<BExpr, Size>();
  /** Copies made of each column as read, by its key. */
  private readonly copies = new Map<string, number>();
  /** Rows a batch of the stage being visited may hold. */
  private rows = BATCH_ROWS;

  constructor(
    private readonly lengthOf: LengthOf,
    private readonly rowShare: number,
  ) {}

  /** Visits the stages; returns the size of each column they end with, by alias. */
  stages(stages: BoundStage[]): Env {
    let env: Env = new Map();
    // The size of an element of the arrays columns hold, where less than the whole, by alias.
    let elementsOf: Env = new Map();
    for (const { stage, out } of stages) {
      if (stage.kind !== 'select' && stage.kind !== 'expand' && stage.kind !== 'filter') elementsOf = new Map();
      switch (stage.kind) {
        case 'scan': {
          this.rows = BATCH_ROWS;
          const types = new Map(out.columns.map((c) => [c.alias, c.type]));
          env = new Map(
            stage.columns.map((c): [string, Size] => {
              if (!isText(types.get(c.alias) ?? 'long')) return [c.alias, SCALAR];
              const bytes = memo(() => this.lengthOf(stage.dataset, c.physical));
              return [c.alias, { bytes, origin: { key: `${stage.dataset}\u0000${c.physical}`, bytes } }];
            }),
          );
          break;
        }
        case 'values': {
          this.rows = Math.max(1, Math.min(BATCH_ROWS, stage.rows.length));
          const sizes = stage.columns.map((_, i) => stage.rows.map((row) => this.expr(row[i]!, env)));
          env = new Map(
            stage.columns.map((c, i) => [
              c.alias,
              { bytes: memo(() => Math.max(0, ...sizes[i]!.map((s) => s.bytes()))) },
            ]),
          );
          const [row] = stage.rows;
          if (stage.rows.length === 1)
            stage.columns.forEach((c, i) => {
              const element = this.elementOf(row![i]!, elementsOf);
              if (element) elementsOf.set(c.alias, element);
            });
          break;
        }
        case 'filter':
          this.expr(stage.predicate, env);
          break;
        case 'select': {
          const elements: Env = new Map();
          env = new Map(
            stage.items.map((it) => {
              const size = this.expr(it.expr, env);
              const element = this.elementOf(it.expr, elementsOf);
              if (element) elements.set(it.alias, element);
              return [it.alias, size];
            }),
          );
          elementsOf = elements;
          break;
        }
        case 'order':
          for (const k of stage.keys) this.expr(k.expr, env);
          if (stage.limit !== undefined) this.rows = Math.max(1, Math.min(this.rows, stage.limit));
          break;
        case 'limit':
          this.rows = Math.max(1, Math.min(this.rows, stage.n));
          break;
        case 'aggregate': {
          const next: Env = new Map(stage.keys.map((k) => [k.alias, this.expr(k.expr, env)]));
          for (const a of stage.aggs) next.set(a.alias, this.expr(a.expr, env));
          env = next;
          break;
        }
        case 'series': {
          const next: Env = new Map(stage.keys.map((k) => [k.alias, this.expr(k.expr, env)]));
          for (const a of stage.aggs) {
            this.expr(a.expr, env);
            this.expr(a.default, env);
            next.set(a.alias, NONE);
          }
          this.expr(stage.axis, env);
          if (stage.from) this.expr(stage.from, env);
          if (stage.to) this.expr(stage.to, env);
          next.set(stage.axisAlias, NONE);
          env = next;
          break;
        }
        case 'count':
          env = new Map([[stage.alias, SCALAR]]);
          this.rows = 1;
          break;
        case 'union': {
          const ends = stage.inputs.map((input) => this.stages(input));
          const aliases = new Set(ends.flatMap((e) => [...e.keys()]));
          env = new Map([...aliases].map((a) => [a, unionOf(ends.map((e) => e.get(a) ?? NONE))]));
          this.rows = BATCH_ROWS;
          break;
        }
        case 'join': {
          const right = this.stages(stage.right);
          env = new Map(env);
          for (const c of stage.rightColumns) env.set(c.alias, right.get(c.from) ?? NONE);
          this.rows = BATCH_ROWS;
          break;
        }
        case 'expand': {
          const before = env;
          env = new Map(env);
          // An element of an array or a bag is no longer than the whole.
          for (const item of stage.items) {
            const whole = this.expr(item.expr, before);
            env.set(item.alias, this.elementOf(item.expr, elementsOf) ?? whole);
            elementsOf.delete(item.alias);
          }
          if (stage.indexAlias) env.set(stage.indexAlias, SCALAR);
          this.rows = BATCH_ROWS;
          break;
        }
        default:
          break;
      }
    }
    return env;
  }

  /** The size of an element of the array an expression is, where known to be less than the whole. */
  private elementOf(e: BExpr, elementsOf: Env): Size | undefined {
    return e.k === 'col' ? elementsOf.get(e.alias) : this.elements.get(e);
  }

  /** Counts what the expression's calls may make; returns the size of its value. */
  private expr(e: BExpr, env: Env): Size {
    switch (e.k) {
      case 'col':
        return env.get(e.alias) ?? (isText(e.type) ? NONE : SCALAR);
      case 'lit':
        return fixedSize(literalBytes(e));
      case 'hidden':
        return SCALAR;
      case 'path': {
        for (const p of e.path) if (typeof p === 'object') this.expr(p, env);
        // A member is a part of the value: members at different paths are different parts of it, each
        // copied with an allowance of its own.
        const whole = this.expr(e.target, env);
        if (!whole.origin) return whole;
        const at = e.path.map((p) => (typeof p === 'object' ? '*' : String(p))).join('\u0002');
        return { bytes: whole.bytes, origin: { key: `${whole.origin.key}\u0002${at}`, bytes: whole.origin.bytes } };
      }
      case 'in':
        this.expr(e.left, env);
        for (const i of e.items) this.expr(i, env);
        return SCALAR;
      case 'between':
        this.expr(e.left, env);
        this.expr(e.low, env);
        this.expr(e.high, env);
        return SCALAR;
      case 'has_any':
        this.expr(e.left, env);
        return SCALAR;
      case 'agg': {
        const args = e.args.map((a) => this.expr(a, env));
        if (!isText(e.type)) return SCALAR;
        return PICKS.has(e.fn) && args[0] ? args[0] : NONE;
      }
      case 'call':
        return this.call(e, env);
    }
  }

  private call(e: Extract<BExpr, { k: 'call' }>, env: Env): Size {
    const sizes = e.args.map((a) => this.expr(a, env));
    if (!isText(e.type)) return SCALAR;
    const args: SizedArg[] = e.args.map((a, i) => ({
      bytes: sizes[i]!.bytes(),
      type: a.type,
      constant: a.k === 'lit' ? { value: a.value } : undefined,
    }));
    const fn = OPERATORS[e.fn] ?? SCALAR_FUNCTIONS[e.fn];
    const counted = fn?.madeBytes ? fn.madeBytes(args) : defaultBytes(e.type, args);
    const constant = isConstant(e);
    if (counted === undefined) {
      // Each row's count is checked against the share as it runs: the call makes that much at most.
      this.shared.push({ fn: e.fn, pos: e.pos });
      this.batch += this.rows * this.rowShare;
      if (fn?.elementBytes) this.elements.set(e, fixedSize(Math.min(this.rowShare, finite(fn.elementBytes(args)))));
      return fixedSize(this.rowShare);
    }
    const bytes = finite(counted);
    if (fn?.elementBytes) this.elements.set(e, fixedSize(Math.min(bytes, finite(fn.elementBytes(args)))));
    // The argument the value copies: the longest one that is not a constant (held once, not a row).
    let copied = -1;
    e.args.forEach((a, i) => {
      if (isText(a.type) && !isConstant(a) && (copied < 0 || args[i]!.bytes > args[copied]!.bytes)) copied = i;
    });
    const source = copied < 0 ? undefined : sizes[copied]!;
    const copy = copied < 0 ? 0 : Math.min(bytes, args[copied]!.bytes);
    const added = bytes - copy + this.copyCost(copy, source?.origin);
    if (constant) this.once += added;
    else {
      this.batch += this.rows * added;
      if (added > (this.largest?.bytes ?? 0)) this.largest = { fn: e.fn, pos: e.pos, bytes: added };
    }
    return { bytes: () => bytes, origin: source?.origin };
  }

  /**
   * What a copy of `copy` bytes counts: past FREE_COPIES of its column, all of it; before, what it holds
   * beyond the column's own longest value (text added to it on the way).
   */
  private copyCost(copy: number, origin: Size['origin']): number {
    if (!origin) return copy;
    const made = (this.copies.get(origin.key) ?? 0) + 1;
    this.copies.set(origin.key, made);
    return made > FREE_COPIES ? copy : Math.max(0, copy - origin.bytes());
  }
}

/**
 * A call no catalog entry sizes: a text no longer than its arguments together, a dynamic value no longer
 * than them with its texts quoted as JSON strings.
 */
function defaultBytes(type: AplType, args: SizedArg[]): number {
  if (type === 'string') return together(args) + CALL_OVERHEAD;
  return args.reduce((n, a) => n + (a.type === 'string' ? JSON_QUOTING * a.bytes + 2 : a.bytes), CALL_OVERHEAD);
}
