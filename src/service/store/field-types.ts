/**
 * Field types and the widening rule for fields seen with several types.
 *
 * Rule (documented in README "Field types"): a field's column has one type. When a batch brings a value of
 * another type, the column widens to the narrowest type holding both: integer + float → float; any other
 * mix → string (numbers and booleans become their JSON text, arrays their JSON text). Widening never loses
 * a value; only the original JSON type of older values is forgotten. Map fields always hold JSON objects.
 */

export type FieldType = 'string' | 'integer' | 'float' | 'boolean' | 'array' | 'map[string]';

export const SQL_TYPE: Record<FieldType, string> = {
  string: 'VARCHAR',
  integer: 'BIGINT',
  float: 'DOUBLE',
  boolean: 'BOOLEAN',
  array: 'JSON',
  'map[string]': 'JSON',
};

/** Bits returned by the ferry_tbit() SQL macro for DuckDB's json_type() names. */
export const TYPE_BIT = { string: 1, integer: 2, float: 4, boolean: 8, array: 16, object: 32 } as const;

export function widen(a: FieldType | undefined, b: FieldType): FieldType {
  if (a === undefined || a === b) return b;
  if (a === 'map[string]' || b === 'map[string]') return 'map[string]';
  if ((a === 'integer' && b === 'float') || (a === 'float' && b === 'integer')) return 'float';
  return 'string';
}

/** The field type of a set of JSON value types seen in one batch (objects excluded), or undefined if none. */
export function typeFromBits(bits: number): FieldType | undefined {
  let t: FieldType | undefined;
  if (bits & TYPE_BIT.string) t = widen(t, 'string');
  if (bits & TYPE_BIT.integer) t = widen(t, 'integer');
  if (bits & TYPE_BIT.float) t = widen(t, 'float');
  if (bits & TYPE_BIT.boolean) t = widen(t, 'boolean');
  if (bits & TYPE_BIT.array) t = widen(t, 'array');
  return t;
}

/** The type of a JS value (labels, which arrive as a JSON header), or undefined for null. */
export function typeOfJsValue(v: unknown): FieldType | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'float';
  if (Array.isArray(v)) return 'array';
  return 'string';
}
