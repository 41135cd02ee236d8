/**
 * Hash functions. md5, sha1 and sha256 are DuckDB's; sha512 and hash() are JavaScript functions registered
 * with DuckDB by the store (service/query/js-functions.ts).
 */
import type { ScalarFunction } from './catalog.js';
import { castTo, checkConvertible, fixed } from './define.js';
import { toStringSql } from './sql.js';
import { lookupTable } from '../../util/lookup.js';

export const HASH_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  hash_md5: fixed('string', ['string'], ([s]) => `md5(${s})`),
  hash_sha1: fixed('string', ['string'], ([s]) => `sha1(${s})`),
  hash_sha256: fixed('string', ['string'], ([s]) => `sha256(${s})`),
  hash_sha512: fixed('string', ['string'], ([s]) => `ferry_sha512(${s})`),
  // hash(source [, salt]): a signed 64-bit xxHash of the value's text, the salt as its seed; null stays null.
  hash: {
    minArgs: 1,
    maxArgs: 2,
    returns: (args) => {
      if (args[1]) checkConvertible(args[1], 'long', 1);
      return 'long';
    },
    sql: ([v, salt]) =>
      `(CASE WHEN ${v!.sql} IS NOT NULL THEN ferry_xxhash64(${toStringSql(v!)}, ${salt ? castTo(salt, 'long') : '0'}) END)`,
  },
  // KQL's hash_xxhash64(source [, mod]): the same xxHash, or its remainder by mod, between 0 and mod - 1.
  hash_xxhash64: {
    minArgs: 1,
    maxArgs: 2,
    returns: (args) => {
      if (args[1]) checkConvertible(args[1], 'long', 1);
      return 'long';
    },
    sql: ([v, mod]) => {
      const h = `ferry_xxhash64(${toStringSql(v!)}, 0)`;
      const m = mod ? castTo(mod, 'long') : undefined;
      return `(CASE WHEN ${v!.sql} IS NOT NULL THEN ${m ? `(CASE WHEN ${m} > 0 THEN ((${h} % ${m}) + ${m}) % ${m} END)` : h} END)`;
    },
  },
});
