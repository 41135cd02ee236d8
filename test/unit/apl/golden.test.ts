/**
 * The SQL the compiler emits for a corpus of APL queries, pinned in test/unit/apl/golden/apl-sql.txt: a change to
 * the binder or compiler that changes the SQL shows here as a diff to read, not only as a result that may
 * still happen to be right. After a deliberate change: `npx vitest run test/unit/apl/golden.test.ts -u`, and
 * read the diff before committing it.
 */
import { describe, expect, it } from 'vitest';
import { bind } from '../../../src/apl/binder/binder.js';
import { compile } from '../../../src/apl/compiler/compiler.js';
import { parseQuery } from '../../../src/apl/parser/parser.js';
import type { DatasetSchema } from '../../../src/apl/types.js';

const ACCESS: DatasetSchema = {
  table: 't_access',
  fields: [
    { name: 'method', column: 'f1', type: 'string' },
    { name: 'uri', column: 'f2', type: 'string' },
    { name: 'status', column: 'f3', type: 'long' },
    { name: 'request_time', column: 'f4', type: 'real' },
    { name: 'remote_addr', column: 'f5', type: 'string' },
    { name: 'tags', column: 'f6', type: 'dynamic', shape: 'array' },
    { name: 'attributes', column: 'f7', type: 'dynamic', shape: 'dictionary' },
    { name: 'cached', column: 'f8', type: 'bool' },
  ],
};
const TRACES: DatasetSchema = {
  table: 't_traces',
  fields: [
    { name: 'trace_id', column: 'f1', type: 'string' },
    { name: 'duration', column: 'f2', type: 'long' },
    { name: 'service', column: 'f3', type: 'string' },
  ],
};

const CORPUS = [
  "['access'] | where status >= 500 | count",
  "['access'] | summarize count() by bin(_time, 1m)",
  "['access'] | summarize dcount(remote_addr)",
  "['access'] | summarize percentile(request_time, 95) by method",
  "['access'] | where uri contains 'ORDERS' | count",
  "['access'] | summarize count() by remote_addr | top 10 by count_",
  "['access'] | where status == 200 and method == 'GET' and request_time > 0.5 | project _time, uri, request_time | sort by request_time desc | take 100",
  "['access'] | extend slow = iff(request_time > 1, 'slow', 'fast') | summarize n = count() by slow",
  "['access'] | where uri startswith '/api' | extend path = tolower(uri) | project path, status",
  "['access'] | where remote_addr in ('10.0.0.1', '10.0.0.2') | distinct method",
  "['access'] | summarize avg(request_time), max(request_time), min(request_time) by status | order by status asc",
  "['access'] | where tags contains 'beta' | take 5",
  "['access'] | extend region = tostring(attributes['region']) | summarize count() by region",
  "['access'] | where cached == true | summarize countif(status >= 400)",
  "['access'] | where isnotempty(method) | summarize arg_max(request_time, uri) by method",
  "['access'] | where status between (400 .. 499) | summarize count() by bin(_time, 1h), method",
  "['access'] | project-away tags, attributes | take 1",
  "['access'] | where _time > ago(1h) | count",
  "['access'] | parse uri with '/' section '/' * | summarize count() by section",
  "['access'] | make-series count() on _time step 1h",
  "['access'] | summarize histogram(request_time, 10), count() by method",
  "['traces'] | summarize percentile(duration, 99), avg(duration) by service",
  "['traces'] | join kind=inner (['access'] | project trace_id = remote_addr, status) on trace_id | count",
  "let slow = ['access'] | where request_time > 2; slow | summarize count() by method",
  "union ['access'], ['traces'] | count",
  "print x = strcat('a', 'b'), y = 1 + 2",
  "datatable(a:long, b:string)[1, 'x', 2, 'y'] | where a > 1",
];

/** A fixed now, so `ago()` compiles to the same literal every run. */
const NOW_NS = 1_767_225_600_000_000_000n; // 2026-01-01T00:00:00Z

function sqlOf(apl: string): string {
  const schemas: Record<string, DatasetSchema> = { access: ACCESS, traces: TRACES };
  const bound = bind(parseQuery(apl), apl, {
    schema: (d) => schemas[d],
    nowNs: NOW_NS,
    binAutoNs: 60_000_000_000n,
    rangeNs: 86_400_000_000_000n,
    datasets: () => Object.keys(schemas),
  });
  return compile(bound.stages, { limit: 1000 }).sql;
}

describe('the SQL the compiler emits (golden)', () => {
  it('matches test/unit/apl/golden/apl-sql.txt for every query of the corpus', async () => {
    const text = CORPUS.map((apl) => `-- ${apl}\n${sqlOf(apl)}\n`).join('\n');
    await expect(text).toMatchFileSnapshot('golden/apl-sql.txt');
  });
});
