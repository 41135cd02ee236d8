/**
 * The SQL the compiler emits for a corpus of APL queries, pinned in test/unit/apl/golden/apl-sql.txt: a change to
 * the binder or compiler that changes the SQL shows here as a diff to read, not only as a result that may
 * still happen to be right. After a deliberate change: `npx vitest run test/unit/apl/golden.test.ts -u`, and
 * read the diff before committing it.
 */
import { describe, expect, it } from 'vitest';
import { ACCESS, compiledSql, TRACES } from '../../support/apl-sql.js';

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
  return compiledSql(apl, { access: ACCESS, traces: TRACES }, { limit: 1000 }, NOW_NS);
}

describe('the SQL the compiler emits (golden)', () => {
  it('matches test/unit/apl/golden/apl-sql.txt for every query of the corpus', async () => {
    const text = CORPUS.map((apl) => `-- ${apl}\n${sqlOf(apl)}\n`).join('\n');
    await expect(text).toMatchFileSnapshot('golden/apl-sql.txt');
  });
});
