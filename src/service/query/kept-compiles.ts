/**
 * The SQL a binding compiles to, kept with the binding for a request over the whole of its datasets (no
 * time range to test, no cursor): a query asked again (a kept binding, ./kept-bindings.ts) then runs
 * without compiling. Compiling between DuckDB scans, whose data has taken the CPU's caches, costs several
 * times what it does in a loop (docs/benchmarks.md, bench:query). A range or a cursor differs from one
 * request to the next, so those are compiled each time and not kept.
 */
import { compile, type CompiledQuery, type CompileOptions } from '../../apl/compiler/compiler.js';
import type { BoundStage } from '../../apl/binder/bound.js';

/** Options a binding is asked with in practice: the page size, the legacy format, the matched-count shape. */
const KEPT_PER_BINDING = 4;

const kept = new WeakMap<BoundStage[], Map<string, CompiledQuery>>();

/**
 * What each compile option is to keeping: part of the key, or what differs from one request to the next,
 * so compiled afresh. The type names every option, so a new one cannot be left out of the key unnoticed.
 */
const OPTION_ROLES: { readonly [K in keyof Required<CompileOptions>]: 'key' | 'afresh' } = {
  startNs: 'afresh',
  endNs: 'afresh',
  cursor: 'afresh',
  samplePercent: 'afresh',
  limit: 'key',
  matchedAt: 'key',
  matchedCte: 'key',
  sysTime: 'key',
  maxResultBytes: 'key',
};
const optionsOf = (role: 'key' | 'afresh') =>
  (Object.keys(OPTION_ROLES) as (keyof CompileOptions)[]).filter((k) => OPTION_ROLES[k] === role);
const AFRESH = optionsOf('afresh');
const KEYED = optionsOf('key');

/** compile(stages, opts), kept for the stages' lifetime when opts bound neither time nor cursor. */
export function compileKept(stages: BoundStage[], opts: CompileOptions): CompiledQuery {
  for (const k of AFRESH) if (opts[k] !== undefined) return compile(stages, opts);
  let key = '';
  for (const k of KEYED) key += `${String(opts[k])}|`;
  let byOptions = kept.get(stages);
  if (!byOptions) kept.set(stages, (byOptions = new Map()));
  let compiled = byOptions.get(key);
  if (!compiled) {
    compiled = compile(stages, opts);
    if (byOptions.size >= KEPT_PER_BINDING) byOptions.delete(byOptions.keys().next().value!);
    byOptions.set(key, compiled);
  }
  return compiled;
}
