/**
 * The genai_* functions of event pipelines, over an event's conversation (an array of messages), with
 * the store's own code (../functions/genai-calls.ts), each answer read as its APL type as the store reads
 * its JSON answer (../functions/genai.ts).
 */
import { genaiCall } from '../functions/genai-calls.js';
import { GENAI_FUNCTIONS } from '../functions/genai.js';
import type { AplType } from '../types.js';
import type { JsFunction } from './function-kit.js';
import { toDynamicValue, type Value } from './values.js';

/** The longest text a call makes from an event's values: beyond it, the call fails (null). */
const LIMIT = { maxChars: 1 << 20, tooLong: () => new RangeError('genai text longer than a million characters') };

function typed(v: unknown, type: AplType): Value {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'string':
      return typeof v === 'string' ? v : JSON.stringify(v);
    case 'long':
    case 'real':
      return typeof v === 'number' ? (type === 'long' ? Math.trunc(v) : v) : null;
    case 'bool':
      return v === true;
    default:
      return v;
  }
}

function genai(op: string): JsFunction {
  return ({ args, type }, c) => {
    const parts = args.map((a) => {
      const f = c.compile(a);
      return (row: Readonly<Record<string, unknown>>) => toDynamicValue(f(row), a.type) ?? null;
    });
    return (row) =>
      typed(
        genaiCall(
          op,
          parts.map((p) => p(row)),
          LIMIT,
        ),
        type,
      );
  };
}

export const GENAI_JS_FUNCTIONS: Record<string, JsFunction> = Object.fromEntries(
  Object.keys(GENAI_FUNCTIONS).map((name) => [name, genai(name.slice('genai_'.length))]),
);
