/**
 * Whether a monitor's APL query fits its type (management.md §1.3): a MatchEvent query filters events
 * with no aggregation; a Threshold query yields numbers to compare; an AnomalyDetection query is a series
 * binned by time. Pure: it reads the parsed and bound query.
 */
import { AplError } from '../../apl/errors.js';
import { parseQuery } from '../../apl/parser/parser.js';
import type { BoundColumn, BoundQuery } from '../../apl/binder/bound.js';
import { FieldError } from '../bodies/fields.js';
import type { MonitorType } from './monitor.js';

/** The operators a MatchEvent query may use: each keeps events one for one. */
export const MATCH_OPERATORS = [
  'where',
  'extend',
  'project',
  'project-away',
  'project-keep',
  'project-rename',
  'project-reorder',
  'parse',
  'parse-where',
  'union',
];

const NUMERIC = new Set(['long', 'real', 'timespan']);

export function isNumericColumn(c: BoundColumn): boolean {
  return NUMERIC.has(c.type);
}

/** The columns a Threshold or AnomalyDetection monitor compares: columnName, or every numeric non-key column. */
export function valueColumns(
  columns: BoundColumn[],
  groups: string[],
  timeColumn: string | undefined,
  columnName: string,
): BoundColumn[] {
  if (columnName) return columns.filter((c) => c.name === columnName);
  return columns.filter(
    (c) => isNumericColumn(c) && c.name !== timeColumn && !groups.includes(c.name) && c.name !== '_time',
  );
}

export function checkMonitorQuery(type: MonitorType, apl: string, bound: BoundQuery, columnName: string): void {
  const last = bound.stages[bound.stages.length - 1]!.out;
  if (type === 'MatchEvent') {
    const q = parseQuery(apl);
    for (const op of q.body.ops) {
      if (!MATCH_OPERATORS.includes(op.op)) {
        const e = new AplError(
          `a MatchEvent monitor notifies each matching event, so its query may only use ${MATCH_OPERATORS.join(', ')}; "${op.op}" changes the rows`,
          apl,
          op.pos,
        );
        throw new FieldError('aplQuery', `does not fit a MatchEvent monitor: ${e.message}`);
      }
    }
    if (!bound.datasets.length)
      throw new FieldError('aplQuery', 'does not fit a MatchEvent monitor: it reads no dataset');
    return;
  }
  if (columnName) {
    const col = last.columns.find((c) => c.name === columnName);
    if (!col)
      throw new FieldError(
        'columnName',
        `"${columnName}" is not a column of the query's result (${last.columns.map((c) => c.name).join(', ')})`,
      );
    if (!isNumericColumn(col))
      throw new FieldError('columnName', `"${columnName}" is a ${col.type} column; a ${type} monitor compares numbers`);
  }
  const values = valueColumns(last.columns, last.groups, last.timeBin?.name, columnName);
  if (!values.length) {
    throw new FieldError(
      'aplQuery',
      `does not fit a ${type} monitor: its result has no numeric column to compare (end the query with summarize, for example \`| summarize count() by bin(_time, 1m)\`)`,
    );
  }
  if (type === 'AnomalyDetection' && !last.timeBin) {
    throw new FieldError(
      'aplQuery',
      'does not fit an AnomalyDetection monitor: its result must be a series binned by time (end it with `| summarize ... by bin(_time, 5m)`)',
    );
  }
}
