/**
 * The legacy query request (POST /v1/datasets/{dataset}/query: filter tree, aggregations, groupBy,
 * resolution, order, limit, project, virtualFields) translated into APL, so that it runs on the one query
 * engine. Pure functions; a request the translation cannot express throws LegacyRequestError (400).
 */

import { parseExpression } from '../../apl/parser/parser.js';
import { parseDuration } from '../../util/units.js';
import { lookupTable } from '../../util/lookup.js';

export class LegacyRequestError extends Error {}

interface Filter {
  op?: string;
  field?: string;
  value?: unknown;
  caseSensitive?: boolean;
  children?: Filter[] | null;
}

interface Aggregation {
  op?: string;
  field?: string;
  alias?: string;
  argument?: unknown;
}

export interface LegacyQuery {
  startTime?: string;
  endTime?: string;
  resolution?: string;
  aggregations?: Aggregation[] | null;
  filter?: Filter | null;
  groupBy?: string[] | null;
  order?: { field: string; desc: boolean }[] | null;
  limit?: number;
  project?: { field: string; alias?: string }[] | null;
  virtualFields?: { alias: string; expr: string }[] | null;
  cursor?: string;
  includeCursor?: boolean;
}

const fail = (m: string): never => {
  throw new LegacyRequestError(m);
};

/** A field reference, always quoted: legacy field names may hold dots and dashes. */
export function fieldRef(name: unknown, where: string): string {
  if (typeof name !== 'string' || name === '') fail(`${where}: field must be a non-empty string`);
  return `['${(name as string).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']`;
}

/** A JSON value as an APL literal. */
export function literal(v: unknown, where: string): string {
  if (v === null || v === undefined) return 'dynamic(null)';
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number' && Number.isFinite(v))
    return Number.isInteger(v) ? String(v) : String(v).includes('.') || String(v).includes('e') ? String(v) : `${v}.0`;
  return fail(`${where}: value must be a string, number, boolean or null`);
}

/** A value a text operator (contains, startswith…) compares with: a string, or a number or boolean as text. */
function textOf(v: unknown, where: string): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return fail(`${where}: value must be a string, number or boolean for this operator`);
}

const COMPARISON: Record<string, string> = lookupTable({
  '==': '==',
  '!=': '!=',
  '>': '>',
  '>=': '>=',
  '<': '<',
  '<=': '<=',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
});

export function filterToApl(f: Filter, path = 'filter', depth = 0): string | undefined {
  if (depth > 64) fail(`${path}: filters are nested too deeply (more than 64 levels)`);
  if (!f || typeof f !== 'object') return fail(`${path}: a filter is an object {op, field, value, children}`);
  const op = f.op ?? '';
  if (op === '') return undefined; // Go clients send an empty filter for "none"
  const cs = f.caseSensitive === true;
  switch (op) {
    case 'and':
    case 'or': {
      const parts = (f.children ?? [])
        .map((c, i) => filterToApl(c, `${path}.children[${i}]`, depth + 1))
        .filter((x): x is string => x !== undefined);
      if (parts.length === 0) return undefined;
      return `(${parts.join(` ${op} `)})`;
    }
    case 'not': {
      const inner = (f.children ?? [])
        .map((c, i) => filterToApl(c, `${path}.children[${i}]`, depth + 1))
        .filter((x): x is string => x !== undefined);
      if (inner.length !== 1) fail(`${path}: "not" takes exactly one child filter`);
      return `not(${inner[0]})`;
    }
    case 'exists':
      return `isnotnull(${fieldRef(f.field, path)})`;
    case 'not-exists':
      return `isnull(${fieldRef(f.field, path)})`;
    case 'starts-with':
      return `${fieldRef(f.field, path)} ${cs ? 'startswith_cs' : 'startswith'} ${literal(textOf(f.value, path), path)}`;
    case 'not-starts-with':
      return `${fieldRef(f.field, path)} ${cs ? '!startswith_cs' : '!startswith'} ${literal(textOf(f.value, path), path)}`;
    case 'ends-with':
      return `${fieldRef(f.field, path)} ${cs ? 'endswith_cs' : 'endswith'} ${literal(textOf(f.value, path), path)}`;
    case 'not-ends-with':
      return `${fieldRef(f.field, path)} ${cs ? '!endswith_cs' : '!endswith'} ${literal(textOf(f.value, path), path)}`;
    case 'contains':
      return `${fieldRef(f.field, path)} ${cs ? 'contains_cs' : 'contains'} ${literal(textOf(f.value, path), path)}`;
    case 'not-contains':
      return `${fieldRef(f.field, path)} ${cs ? '!contains_cs' : '!contains'} ${literal(textOf(f.value, path), path)}`;
    case 'regexp':
      return `${fieldRef(f.field, path)} matches regex ${literal(textOf(f.value, path), path)}`;
    case 'not-regexp':
      return `not(${fieldRef(f.field, path)} matches regex ${literal(textOf(f.value, path), path)})`;
    default: {
      const cmp = COMPARISON[op];
      if (!cmp) return fail(`${path}.op: unknown filter op "${op}"`);
      if (!cs && typeof f.value === 'string' && (cmp === '==' || cmp === '!=')) {
        return `${fieldRef(f.field, path)} ${cmp === '==' ? '=~' : '!~'} ${literal(f.value, path)}`;
      }
      return `${fieldRef(f.field, path)} ${cmp} ${literal(f.value, path)}`;
    }
  }
}

function aggregationToApl(a: Aggregation, i: number): string {
  const path = `aggregations[${i}]`;
  const f = () => fieldRef(a.field, path);
  const name = a.alias || (a.op === 'count' ? 'count' : `${a.op}_${a.field ?? ''}`);
  let call: string;
  switch (a.op) {
    case 'count':
      call = 'count()';
      break;
    case 'distinct':
      call = `dcount(${f()})`;
      break;
    case 'sum':
    case 'avg':
    case 'min':
    case 'max':
    case 'stdev':
    case 'variance':
      call = `${a.op}(${f()})`;
      break;
    case 'makeset':
      call = `make_set(${f()})`;
      break;
    case 'makelist':
      call = `make_list(${f()})`;
      break;
    case 'percentiles': {
      const ps = Array.isArray(a.argument) ? a.argument : [a.argument ?? 50];
      if (!ps.every((p) => typeof p === 'number')) fail(`${path}.argument: percentiles take numbers`);
      call = `percentiles_array(${f()}, ${ps.join(', ')})`;
      break;
    }
    default:
      return fail(`${path}.op: the aggregation "${a.op}" is not supported by the legacy query endpoint`);
  }
  return `${fieldRef(name, path)} = ${call}`;
}

/** The APL text of a legacy query against a dataset. */
export function legacyToApl(dataset: string, q: LegacyQuery): string {
  const ops: string[] = [fieldRef(dataset, 'dataset')];
  for (const [i, v] of (q.virtualFields ?? []).entries()) {
    if (!v || typeof v.expr !== 'string') fail(`virtualFields[${i}]: needs alias and expr`);
    // An expression, and nothing more: pasted as it was, `1\n| union ['other']` would add a stage.
    try {
      parseExpression(v.expr);
    } catch (e) {
      fail(`virtualFields[${i}].expr: not an APL expression: ${(e as Error).message}`);
    }
    ops.push(`extend ${fieldRef(v.alias, `virtualFields[${i}]`)} = (${v.expr})`);
  }
  const where = q.filter ? filterToApl(q.filter) : undefined;
  if (where) ops.push(`where ${where}`);
  const aggs = q.aggregations ?? [];
  if (aggs.length > 0) {
    const by = (q.groupBy ?? []).map((g, i) => fieldRef(g, `groupBy[${i}]`));
    const res = q.resolution ?? '';
    if (res === 'auto') by.unshift('bin_auto(_time)');
    else if (res !== '' && res !== '0s') {
      if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(res))
        fail(`resolution: "${res}" is not a duration such as 1m0s or auto`);
      by.unshift(`bin(_time, ${parseDuration(res)}nanoseconds)`);
    }
    ops.push(`summarize ${aggs.map(aggregationToApl).join(', ')}${by.length ? ` by ${by.join(', ')}` : ''}`);
    return ops.join('\n| ');
  }
  const order = q.order?.length ? q.order : [{ field: '_time', desc: true }];
  ops.push(
    `sort by ${order.map((o, i) => `${fieldRef(o.field, `order[${i}]`)} ${o.desc ? 'desc' : 'asc'}`).join(', ')}`,
  );
  if (q.limit !== undefined && q.limit > 0) ops.push(`take ${Math.floor(q.limit)}`);
  if (q.project?.length) {
    ops.push(
      `project ${q.project.map((p, i) => (p.alias ? `${fieldRef(p.alias, `project[${i}]`)} = ${fieldRef(p.field, `project[${i}]`)}` : fieldRef(p.field, `project[${i}]`))).join(', ')}`,
    );
  }
  return ops.join('\n| ');
}
