/**
 * The time-series functions that loop over a series (apl/functions/series-loops.ts), registered with
 * DuckDB as ferry_series(op, args, deadline): `args` a JSON array of the APL call's arguments, the answer
 * JSON text; a call after the statement's deadline fails it.
 */
import { seriesCall } from '../../apl/functions/series-loops.js';
import { type JsBudget, jsonOpFunction } from './duckdb-function.js';

export const seriesFunction = (budget: JsBudget) =>
  jsonOpFunction('ferry_series', 'series_', seriesCall, budget, { stopsAtDeadline: true });
