/**
 * JSON text for answers that may hold BigInts (64-bit integers past 2^53, from query results): each is
 * written as its exact digits, where JSON.stringify would throw and Number() would round
 * (9007199254740993 is not a double). Node 20 has no JSON.rawJSON, so each BigInt is first written as a
 * string marked with a nonce of this answer, then the quotes and the mark are taken off.
 */
import { randomBytes } from 'node:crypto';

/** Whether any column of any table holds a BigInt (only then is the slower path needed). */
export function holdsBigInts(tables: readonly { values: readonly (readonly unknown[])[] }[]): boolean {
  for (const t of tables) for (const col of t.values) for (const v of col) if (typeof v === 'bigint') return true;
  return false;
}

export function exactJson(value: unknown): string {
  return exactStringifier()(value);
}

/** exactJson as one writer for the many parts of one answer: one nonce and one pattern for them all. */
export function exactStringifier(): (value: unknown) => string {
  const mark = randomBytes(9).toString('hex');
  const marked = new RegExp(`"${mark}(-?[0-9]+)"`, 'g');
  const replacer = (_key: string, v: unknown) => (typeof v === 'bigint' ? `${mark}${v}` : v);
  return (value) => JSON.stringify(value, replacer).replace(marked, '$1');
}
