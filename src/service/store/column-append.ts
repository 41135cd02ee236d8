/**
 * Rows given as columns of 8-byte numbers appended to a table through DuckDB's appender, a data chunk at a
 * time, their bytes copied into each vector as they lie: no value is converted one by one in JavaScript,
 * no text is written or parsed (metrics-store.ts's points; docs/benchmarks.md measures it against loading
 * a CSV file). A BIGINT column is a BigInt64Array, a DOUBLE column a Float64Array whose NaNs are nulls.
 */
import { BIGINT, DOUBLE, type DuckDBConnection, DuckDBDataChunk } from '@duckdb/node-api';
import duckdb from '@duckdb/node-bindings';

export type Int64Column = BigInt64Array;
export type DoubleColumn = Float64Array;

/** DuckDB's vector size: the most rows a data chunk holds. */
const CHUNK_ROWS = 2048;
/** Rows appended between two turns of the event loop (the appender runs on the loop's thread). */
const ROWS_PER_TURN = 65_536;

/**
 * Appends `rows` rows of `columns` to `table`, within the connection's transaction when one is open (the
 * rows are then the transaction's, committed or rolled back with it).
 */
export async function appendColumns(
  conn: DuckDBConnection,
  table: string,
  columns: readonly (Int64Column | DoubleColumn)[],
  rows: number,
): Promise<void> {
  for (const c of columns)
    if (c.length < rows) throw new Error(`appending ${rows} rows to ${table}: a column holds only ${c.length}`);
  const types = columns.map((c) => (c instanceof BigInt64Array ? BIGINT : DOUBLE));
  const appender = await conn.createAppender(table);
  try {
    // One mask, reused: a bit a row, 1 for a value, 0 for a null (DuckDB's validity layout).
    const mask = new BigUint64Array(CHUNK_ROWS / 64);
    for (let from = 0; from < rows; from += CHUNK_ROWS) {
      if (from > 0 && from % ROWS_PER_TURN === 0) await new Promise((r) => setImmediate(r));
      const n = Math.min(CHUNK_ROWS, rows - from);
      const chunk = DuckDBDataChunk.create(types, n);
      columns.forEach((c, j) => {
        const vector = duckdb.data_chunk_get_vector(chunk.chunk, j);
        duckdb.copy_data_to_vector(vector, 0, c.buffer as ArrayBuffer, c.byteOffset + from * 8, n * 8);
        if (c instanceof Float64Array && nullsOf(c, from, n, mask)) {
          duckdb.vector_ensure_validity_writable(vector);
          duckdb.copy_data_to_vector_validity(vector, 0, mask.buffer, 0, Math.ceil(n / 64) * 8);
        }
      });
      appender.appendDataChunk(chunk);
    }
    appender.closeSync();
  } catch (e) {
    // The rows held are dropped, not flushed: the caller's transaction fails with the first error.
    try {
      appender.clear();
      appender.closeSync();
    } catch {
      // closing a failed appender may fail too; the first error is the one to report
    }
    throw e;
  }
}

/** Whether rows from..from+n of `c` hold a NaN; if so `mask` says which rows hold a value. */
function nullsOf(c: Float64Array, from: number, n: number, mask: BigUint64Array): boolean {
  let any = false;
  for (let i = 0; i < n; i++) {
    const v = c[from + i]!;
    if (v !== v) {
      if (!any) {
        mask.fill(0xffffffffffffffffn);
        any = true;
      }
      const w = i >> 6;
      mask[w] = mask[w]! & ~(1n << BigInt(i & 63));
    }
  }
  return any;
}

/** Whole numbers (within ±2^53, else an error) as a BIGINT column, written through their 32-bit halves (no BigInt each). */
export function int64Column(values: ArrayLike<number>, rows: number): Int64Column {
  const out = new BigInt64Array(rows);
  const halves = new Int32Array(out.buffer);
  for (let i = 0; i < rows; i++) {
    const v = values[i]!;
    if (!Number.isSafeInteger(v)) throw new Error(`a BIGINT column got ${v}, not a whole number within ±2^53`);
    halves[2 * i] = v >>> 0;
    halves[2 * i + 1] = Math.floor(v / 4294967296);
  }
  return out;
}
