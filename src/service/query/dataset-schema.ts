/** A stored dataset's fields as APL types: what the query engine hands the binder. */
import { SQL_TYPE_OF, type AplType, type DatasetSchema, type DynamicShape } from '../../apl/types.js';
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
      const kindType = Object.hasOwn(byKind, f.name) ? byKind[f.name] : undefined;
      if (!kindType || f.type === 'array' || f.type === 'map[string]' || f.type === 'boolean')
        return { name: f.name, column: f.column, ...APL_TYPE[f.type] };
      // Stored wider than its kind says (a client sent a float or a text): read as the kind's type, so the
      // dataset's queries keep working; what does not convert is null.
      return {
        name: f.name,
        column: f.column,
        type: kindType,
        ...(f.type === 'integer' ? {} : { readAs: SQL_TYPE_OF[kindType] }),
      };
    }),
  };
}
