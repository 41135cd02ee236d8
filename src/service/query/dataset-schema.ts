/** A stored dataset's fields as APL types: what the query engine hands the binder. */
import type { AplType, DatasetSchema, DynamicShape } from '../../apl/types.js';
import type { FieldType } from '../store/field-types.js';
import type { SchemaField } from '../store/ingest-plan.js';

const APL_TYPE: Record<FieldType, { type: AplType; shape?: DynamicShape }> = {
  string: { type: 'string' },
  integer: { type: 'long' },
  float: { type: 'real' },
  boolean: { type: 'bool' },
  array: { type: 'dynamic', shape: 'array' },
  'map[string]': { type: 'dynamic', shape: 'dictionary' },
};

/**
 * Types a dataset's kind gives fields whose JSON cannot say them: an OTel span's `duration`, stored as
 * integer nanoseconds, is a timespan in a dataset of spans (`duration > 100ms`, `avg(duration)`).
 */
const KIND_TYPES: Record<string, Record<string, AplType>> = { 'otel:traces:v1': { duration: 'timespan' } };

export function datasetSchema(stored: { table: string; kind?: string; fields: readonly SchemaField[] }): DatasetSchema {
  const byKind = (stored.kind && KIND_TYPES[stored.kind]) || {};
  return {
    table: stored.table,
    fields: stored.fields.map((f) => {
      const kindType = Object.hasOwn(byKind, f.name) && f.type === 'integer' ? byKind[f.name] : undefined;
      return { name: f.name, column: f.column, ...(kindType ? { type: kindType } : APL_TYPE[f.type]) };
    }),
  };
}
