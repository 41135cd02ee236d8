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

export function datasetSchema(stored: { table: string; fields: readonly SchemaField[] }): DatasetSchema {
  return {
    table: stored.table,
    fields: stored.fields.map((f) => ({ name: f.name, column: f.column, ...APL_TYPE[f.type] })),
  };
}
