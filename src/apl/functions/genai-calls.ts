/**
 * What the genai_* functions compute over OpenTelemetry GenAI conversations, for the store (registered
 * with DuckDB as ferry_genai(op, args) by service/query/genai-functions.ts) and for event pipelines
 * (../js/genai-functions.ts) alike. A conversation is an array of messages {role, content}, the content a
 * string or an array of parts ({type, text} or {type, content}); the newer convention's {role, parts} is
 * read too. Pure functions.
 */
import { pricingOf } from './genai-pricing.js';

/** The longest text a call may make, and the error that refuses a longer one (the caller's budget). */
export interface TextLimit {
  maxChars: number;
  tooLong(): Error;
}

const NO_LIMIT: TextLimit = { maxChars: Infinity, tooLong: () => new RangeError('too long') };

type Message = Record<string, unknown>;

function messages(v: unknown): Message[] | null {
  if (!Array.isArray(v)) return null;
  return v.filter((m): m is Message => m !== null && typeof m === 'object' && !Array.isArray(m));
}

/** The text of a message: its content, or the texts of its parts joined. */
export function contentOf(m: Message | undefined): string {
  if (!m) return '';
  const body = m.content ?? m.parts;
  if (typeof body === 'string') return body;
  if (!Array.isArray(body)) return body === undefined || body === null ? '' : JSON.stringify(body);
  return body
    .map((p) => {
      if (typeof p === 'string') return p;
      if (p && typeof p === 'object') {
        const part = p as Record<string, unknown>;
        const text = part.text ?? (part.type === undefined || part.type === 'text' ? part.content : undefined);
        return typeof text === 'string' ? text : '';
      }
      return '';
    })
    .join('');
}

const roleOf = (m: Message | undefined) => (typeof m?.role === 'string' ? m.role : '');

/** A message at a position from 0; negative positions count from the end. */
function at(ms: Message[], index: unknown): Message | undefined {
  if (typeof index !== 'number' || !Number.isInteger(index)) return undefined;
  return ms[index < 0 ? ms.length + index : index];
}

const lastWithRole = (ms: Message[], role: string) => [...ms].reverse().find((m) => roleOf(m) === role);

/** The tool calls of a conversation: assistant tool_calls arrays and tool-call parts, in order. */
function toolCalls(ms: Message[]): unknown[] {
  const calls: unknown[] = [];
  for (const m of ms) {
    if (Array.isArray(m.tool_calls)) calls.push(...(m.tool_calls as unknown[]));
    const parts = Array.isArray(m.parts) ? m.parts : Array.isArray(m.content) ? m.content : [];
    for (const p of parts as unknown[]) {
      const t = p && typeof p === 'object' ? (p as Record<string, unknown>).type : undefined;
      if (t === 'tool_call' || t === 'tool_use' || t === 'function_call') calls.push(p);
    }
  }
  return calls;
}

/** Finish reasons that mean the model stopped at its token limit. */
const TRUNCATED = new Set(['length', 'max_tokens', 'max_output_tokens', 'MAX_TOKENS']);

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** One call: the function's name (without genai_) and its arguments as parsed JSON. */
export function genaiCall(op: string, args: unknown[], limit: TextLimit = NO_LIMIT): unknown {
  switch (op) {
    case 'estimate_tokens': {
      // About four characters a token, as the common tokenizers average on English text.
      const text = typeof args[0] === 'string' ? args[0] : args[0] === null ? null : JSON.stringify(args[0]);
      return text === null ? null : Math.ceil([...text].length / 4);
    }
    case 'get_pricing': {
      const p = typeof args[0] === 'string' ? pricingOf(args[0]) : undefined;
      return p ? { input_price_per_million: p.input, output_price_per_million: p.output } : null;
    }
    case 'cost':
    case 'input_cost':
    case 'output_cost': {
      const p = typeof args[0] === 'string' ? pricingOf(args[0]) : undefined;
      if (!p) return null;
      const input = op === 'output_cost' ? 0 : num(args[1]);
      const output = op === 'cost' ? num(args[2]) : op === 'output_cost' ? num(args[1]) : 0;
      if (input === null || output === null) return null;
      return (input * p.input + output * p.output) / 1_000_000;
    }
    default:
      break;
  }
  const ms = messages(args[0]);
  if (!ms) return null;
  switch (op) {
    case 'concat_contents': {
      const parts = ms.map(contentOf);
      const sep = typeof args[1] === 'string' ? args[1] : ' ';
      // The joined text's length is known before it is made: one past the budget is never built.
      const length = parts.reduce((n, p) => n + p.length, 0) + sep.length * Math.max(0, parts.length - 1);
      if (length > limit.maxChars) throw limit.tooLong();
      return parts.join(sep);
    }
    case 'conversation_turns':
      return ms.filter((m) => roleOf(m) === 'user').length;
    case 'extract_assistant_response':
      return contentOf(lastWithRole(ms, 'assistant'));
    case 'extract_user_prompt':
      return contentOf(lastWithRole(ms, 'user'));
    case 'extract_system_prompt':
      return contentOf(ms.find((m) => roleOf(m) === 'system'));
    case 'get_content_by_index':
      return contentOf(at(ms, args[1]));
    case 'get_content_by_role':
      return contentOf(ms.find((m) => roleOf(m) === args[1]));
    case 'get_role':
      return roleOf(at(ms, args[1]));
    case 'message_roles':
      return ms.map(roleOf);
    case 'extract_tool_calls': {
      const calls = toolCalls(ms);
      return calls.length ? calls : null;
    }
    case 'has_tool_calls':
      return toolCalls(ms).length > 0;
    case 'extract_function_results': {
      const results = ms.filter((m) => roleOf(m) === 'tool' || roleOf(m) === 'function').map(contentOf);
      return results.length ? results : null;
    }
    case 'is_truncated': {
      const reasons = Array.isArray(args[1]) ? args[1] : [args[1]];
      return reasons.some((r) => typeof r === 'string' && TRUNCATED.has(r));
    }
    default:
      throw new Error(`unknown genai function genai_${op}`);
  }
}
