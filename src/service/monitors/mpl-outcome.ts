/**
 * An MPL result as the table a monitor's evaluation reads (evaluate.ts): a row a point with a value, with
 * columns `_time`, each tag (the alert groups: a series is a group with notifyByGroup) and `value`, binned
 * by the series' resolution. So Threshold and AnomalyDetection monitors judge metrics by the rules they
 * judge events by. Pure.
 */
import type { BoundColumn } from '../../apl/binder/bound.js';
import type { QueryOutcome, ResultTable } from '../query/engine.js';
import type { MplResult } from '../query/mpl-queries.js';

const column = (name: string, type: BoundColumn['type']): BoundColumn => ({ name, type, alias: name });

export function mplOutcome(result: MplResult, endNs: bigint): QueryOutcome {
  const tags = [...new Set(result.series.flatMap((s) => Object.keys(s.tags)))].sort();
  const values: unknown[][] = [[], ...tags.map(() => []), []];
  let resolution = 0;
  for (const s of result.series) {
    resolution = Math.max(resolution, s.resolution);
    s.data.forEach((v, i) => {
      if (v === null) return;
      values[0]!.push(new Date((s.start + i * s.resolution) * 1000).toISOString());
      tags.forEach((k, j) => values[j + 1]!.push(s.tags[k] ?? null));
      values[tags.length + 1]!.push(v);
    });
  }
  const table: ResultTable = {
    name: '0',
    columns: [column('_time', 'datetime'), ...tags.map((k) => column(k, 'string')), column('value', 'real')],
    values,
    order: [{ field: '_time', desc: false }],
    groups: ['_time', ...tags],
    buckets: { field: '_time', size: resolution * 1e9 },
  };
  const rows = values[0]!.length;
  return {
    tables: [table],
    datasets: result.datasets,
    endNs,
    status: {
      elapsedTime: 0,
      rowsExamined: rows,
      rowsMatched: rows,
      blocksExamined: 0,
      numGroups: result.series.length,
      isPartial: false,
      minCursor: '',
      maxCursor: '',
      minBlockTime: '',
      maxBlockTime: '',
      messages: result.metadata.warnings.map((msg) => ({ priority: 'warn', count: 1, code: 'mpl_warning', msg })),
    },
  };
}
