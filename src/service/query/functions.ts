/**
 * The JavaScript functions APL queries call inside DuckDB (geo, series, genai, analysis, hashes and the
 * rest), each bounded by the query budget. Whoever opens the store for queries registers them on it
 * (`StoreOptions.functions`): the store below knows nothing of queries.
 */
import type { DuckDBScalarFunction } from '@duckdb/node-api';
import { analysisFunctions } from './analysis-functions.js';
import { genaiFunction } from './genai-functions.js';
import { geoInfoFunction } from './geoip.js';
import { DEFAULT_JS_BUDGET, type JsBudget } from './js-budget.js';
import { jsFunctions } from './js-functions.js';
import { seriesFunction } from './series-functions.js';

export async function queryFunctions(budget: JsBudget = DEFAULT_JS_BUDGET): Promise<DuckDBScalarFunction[]> {
  return [
    geoInfoFunction(budget),
    seriesFunction(budget),
    genaiFunction(budget),
    ...analysisFunctions(budget),
    ...(await jsFunctions(budget)),
  ];
}
