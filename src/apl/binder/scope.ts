/**
 * Names and context of one binding: the query text (for positions in errors), the datasets and values it
 * may name, the let bindings in view, and the counters that name generated columns. Every part of the
 * binder reads and writes the query's state here.
 */
import { AplError } from '../errors.js';
import { AGGREGATE_FUNCTIONS } from '../functions/aggregate.js';
import type { TypeContext } from '../functions/catalog.js';
import { SCALAR_FUNCTIONS } from '../functions/scalar.js';
import type { Expr, TabularExpr } from '../parser/ast.js';
import type { DatasetSchema } from '../types.js';
import type { BExpr, BoundQuery } from './bound.js';

export interface BindOptions {
  /** The dataset's schema, or undefined when there is no such dataset. */
  schema(dataset: string): DatasetSchema | undefined;
  /** now() for the whole query, ns since the epoch; `live`: the instant each event is evaluated at. */
  nowNs: bigint | 'live';
  /** The bin size bin_auto() uses (chosen by the caller from the query's time range). */
  binAutoNs: bigint;
  /** The length of the query's time range (rate() without a time bin divides by it). */
  rangeNs: bigint;
  /** Every dataset's name, for patterns (union github*, search). */
  datasets(): string[];
  /**
   * Bounds on what lets multiply: a let is written out wherever it is used, so a few lines can stand for
   * millions of terms or operators. Each is refused naming `setting` (the caller's name for the limit).
   */
  limits?: BindLimits;
  /**
   * A name that is no column and no let: an error (a query), a dynamic null (a monitor saved before its
   * data arrived: its runs report the missing field until it exists), or a dynamic field of the event (an
   * agent's transform, over events whose fields are not known in advance).
   */
  unknownNames?: 'error' | 'null' | 'field';
}

export interface BindLimits {
  /** Terms of the query's expressions with every scalar let written out. */
  terms: { max: number; setting: string };
  /** Nesting of one expression with every scalar let written out. */
  depth: { max: number; setting: string };
  /** Uses of tabular lets, each a copy of its pipeline. */
  letUses: { max: number; setting: string };
}

/** A tabular let is bound where it is used, but with the names defined before it (no self or forward references). */
export type LetValue =
  { kind: 'scalar'; expr: BExpr } | { kind: 'tabular'; expr: TabularExpr; env: Map<string, LetValue> };

export class Scope {
  lets = new Map<string, LetValue>();
  readonly typeCtx: TypeContext = { strict: false };
  /** The datasets the query reads. */
  readonly datasets = new Set<string>();
  readonly messages: BoundQuery['messages'] = [];
  binAutoUsed = false;
  rangeLengthUsed = false;
  /** Tabular lets written out so far (BindLimits.letUses). */
  letUses = 0;
  private aliasSeq = 0;
  private columnSeq = 0;

  constructor(
    readonly src: string,
    readonly opts: BindOptions,
  ) {}

  fail(message: string, pos: number): never {
    throw new AplError(message, this.src, pos);
  }

  alias(): string {
    return `c${++this.aliasSeq}`;
  }

  nextColumnName(): string {
    return `Column${++this.columnSeq}`;
  }

  /** The output name of an unnamed expression (apl.md 4.4). */
  derivedName(e: Expr, allocate: boolean): string {
    switch (e.kind) {
      case 'name':
        return e.name;
      case 'member':
      case 'index': {
        const parts: string[] = [];
        let cur: Expr = e;
        while (cur.kind === 'member' || cur.kind === 'index') {
          if (cur.kind === 'member') parts.unshift(cur.name);
          else {
            const idx = (cur as Extract<Expr, { kind: 'index' }>).index;
            if (idx.kind === 'literal') parts.unshift(String(idx.value));
          }
          cur = cur.target;
        }
        if (cur.kind === 'name') {
          if (e.kind === 'member' && !cur.quoted) return [cur.name, ...parts].join('.');
          return [cur.name, ...parts].join('_');
        }
        return allocate ? this.nextColumnName() : '';
      }
      case 'call': {
        const naming = (SCALAR_FUNCTIONS[e.name] ?? AGGREGATE_FUNCTIONS[e.name])?.resultName;
        if (naming === 'argument' && e.args[0]) return this.derivedName(e.args[0], allocate);
        if (typeof naming === 'function' && e.args[0]?.kind === 'name') return naming(e.args[0].name);
        return allocate ? this.nextColumnName() : '';
      }
      default:
        return allocate ? this.nextColumnName() : '';
    }
  }
}
