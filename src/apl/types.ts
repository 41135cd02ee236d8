/**
 * APL's scalar types, how each is held in DuckDB, and the type names of the wire formats.
 *
 * Held in DuckDB as: string VARCHAR, long BIGINT, real DOUBLE, bool BOOLEAN, datetime TIMESTAMP_NS,
 * timespan BIGINT nanoseconds, dynamic JSON.
 */
export type AplType = 'string' | 'long' | 'real' | 'bool' | 'datetime' | 'timespan' | 'dynamic';

export const SQL_TYPE_OF: Record<AplType, string> = {
  string: 'VARCHAR',
  long: 'BIGINT',
  real: 'DOUBLE',
  bool: 'BOOLEAN',
  datetime: 'TIMESTAMP_NS',
  timespan: 'BIGINT',
  dynamic: 'JSON',
};

/** What a dynamic value holds, when known (stored arrays and map fields), for the wire type name. */
export type DynamicShape = 'array' | 'dictionary' | undefined;

/**
 * A dataset as a query sees it, handed to the binder by whoever stores it: the table, and each field's
 * physical column with its APL type (and, for dynamic fields, what they hold).
 */
export interface DatasetSchema {
  table: string;
  /**
   * `readAs`: the SQL type the column is read as (TRY_CAST), when the field's APL type is not its stored
   * one (a traces dataset's `duration`, a timespan, stored as a float after a client sent one).
   */
  fields: { name: string; column: string; type: AplType; shape?: DynamicShape; readAs?: string }[];
}

/** The field type of a tabular result (`fields[].type`). */
export function wireType(t: AplType, shape?: DynamicShape): string {
  switch (t) {
    case 'string':
      return 'string';
    case 'long':
      return 'integer';
    case 'real':
      return 'float';
    case 'bool':
      return 'boolean';
    case 'datetime':
      return 'datetime';
    case 'timespan':
      return 'timespan';
    case 'dynamic':
      return shape ?? 'unknown';
  }
}

/** The type names getschema shows (`DataType` is the .NET-style name, `ColumnType` the APL name). */
export const SCHEMA_TYPE: Record<AplType, { dataType: string; columnType: string }> = {
  string: { dataType: 'System.String', columnType: 'string' },
  long: { dataType: 'System.Int64', columnType: 'long' },
  real: { dataType: 'System.Double', columnType: 'real' },
  bool: { dataType: 'System.Boolean', columnType: 'bool' },
  datetime: { dataType: 'System.DateTime', columnType: 'datetime' },
  timespan: { dataType: 'System.TimeSpan', columnType: 'timespan' },
  dynamic: { dataType: 'System.Object', columnType: 'dynamic' },
};

export const isNumeric = (t: AplType) => t === 'long' || t === 'real';
