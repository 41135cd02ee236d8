/**
 * The genai_* functions registered with DuckDB as ferry_genai(op, args): `args` a JSON array of the call's
 * arguments, the answer JSON text, computed by apl/functions/genai-calls.ts within the call's budget.
 */
import { genaiCall } from '../../apl/functions/genai-calls.js';
import { callLimits, type JsBudget, jsonOpFunction, OverBudget } from './duckdb-function.js';

const limit = {
  get maxChars() {
    return callLimits().maxChars;
  },
  tooLong: () => new OverBudget('value'),
};

export const genaiFunction = (budget: JsBudget) =>
  jsonOpFunction('ferry_genai', 'genai_', (op, args) => genaiCall(op, args, limit), budget);
