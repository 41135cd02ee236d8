/**
 * The genai_* functions over OpenTelemetry GenAI conversations (arrays of {role, content} messages) and
 * model prices. They are one JavaScript function registered with DuckDB (service/query/genai-functions.ts);
 * this catalog types each one and reads its JSON answer back as that type.
 */
import type { ScalarFunction } from './catalog.js';
import { toDynamicSql, type SqlArg } from './sql.js';
import type { AplType } from '../types.js';
import { lookupTable } from '../../util/lookup.js';

function call(op: string, args: SqlArg[]): string {
  const json = `json_array(${args.map((a) => `COALESCE(${toDynamicSql(a)}, 'null'::JSON)`).join(', ')})`;
  return `ferry_genai('${op}', CAST(${json} AS VARCHAR))`;
}

/** The JSON answer as the function's APL type. */
function typed(sql: string, type: AplType): string {
  switch (type) {
    case 'string':
      return `json_extract_string(CAST(${sql} AS JSON), '$')`;
    case 'long':
      return `TRY_CAST(${sql} AS BIGINT)`;
    case 'real':
      return `TRY_CAST(${sql} AS DOUBLE)`;
    case 'bool':
      return `(${sql} = 'true')`;
    default:
      return `CAST(${sql} AS JSON)`;
  }
}

function genai(
  op: string,
  type: AplType,
  minArgs: number,
  maxArgs = minArgs,
  shape?: 'array' | 'dictionary',
): ScalarFunction {
  return { minArgs, maxArgs, shape, returns: () => type, sql: (args) => typed(call(op, args), type) };
}

export const GENAI_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  genai_concat_contents: genai('concat_contents', 'string', 1, 2),
  genai_conversation_turns: genai('conversation_turns', 'long', 1),
  genai_estimate_tokens: genai('estimate_tokens', 'long', 1),
  genai_extract_assistant_response: genai('extract_assistant_response', 'string', 1),
  genai_extract_user_prompt: genai('extract_user_prompt', 'string', 1),
  genai_extract_system_prompt: genai('extract_system_prompt', 'string', 1),
  genai_extract_function_results: genai('extract_function_results', 'dynamic', 1, 1, 'array'),
  genai_extract_tool_calls: genai('extract_tool_calls', 'dynamic', 1, 1, 'array'),
  genai_get_content_by_index: genai('get_content_by_index', 'string', 2),
  genai_get_content_by_role: genai('get_content_by_role', 'string', 2),
  genai_get_role: genai('get_role', 'string', 2),
  genai_message_roles: genai('message_roles', 'dynamic', 1, 1, 'array'),
  genai_has_tool_calls: genai('has_tool_calls', 'bool', 1),
  genai_is_truncated: genai('is_truncated', 'bool', 2),
  genai_get_pricing: genai('get_pricing', 'dynamic', 1, 1, 'dictionary'),
  genai_cost: genai('cost', 'real', 3),
  genai_input_cost: genai('input_cost', 'real', 2),
  genai_output_cost: genai('output_cost', 'real', 2),
});
