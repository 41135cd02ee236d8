/** APL queries over given datasets, bound as the engine binds them, and the SQL the compiler makes of them. */
import { bind } from '../../src/apl/binder/binder.js';
import type { BoundQuery } from '../../src/apl/binder/bound.js';
import { compile, type CompileOptions } from '../../src/apl/compiler/compiler.js';
import { parseQuery } from '../../src/apl/parser/parser.js';
import type { DatasetSchema } from '../../src/apl/types.js';

/** Datasets to compile against: web access logs and traces. */
export const ACCESS: DatasetSchema = {
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
export const TRACES: DatasetSchema = {
  table: 't_traces',
  fields: [
    { name: 'trace_id', column: 'f1', type: 'string' },
    { name: 'duration', column: 'f2', type: 'long' },
    { name: 'service', column: 'f3', type: 'string' },
  ],
};

/** An APL query bound over given datasets, as the engine binds it. */
export function boundQuery(apl: string, schemas: Record<string, DatasetSchema>, nowNs = 0n): BoundQuery {
  return bind(parseQuery(apl), apl, {
    schema: (d) => schemas[d],
    nowNs,
    binAutoNs: 60_000_000_000n,
    rangeNs: 86_400_000_000_000n,
    datasets: () => Object.keys(schemas),
  });
}

export function compiledSql(
  apl: string,
  schemas: Record<string, DatasetSchema>,
  opts: CompileOptions = {},
  nowNs = 0n,
): string {
  return compile(boundQuery(apl, schemas, nowNs).stages, opts).sql;
}
