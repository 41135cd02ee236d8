/**
 * Strings come out of DuckDB as they went in. @duckdb/node-api decodes every VARCHAR with one shared
 * `TextDecoder()`, whose default drops a leading U+FEFF: a value starting with it came back a character
 * short, and a key "\ufeffa" read back as "a" (json_keys), merging two fields. The decoder is a property
 * of the module's exports, read at each call, so it is replaced here by one that keeps the mark.
 * The package is pinned; test/integration/service/store/values-roundtrip.test.ts fails if a new version decodes otherwise.
 */
import { createRequire } from 'node:module';

const accessors = createRequire(import.meta.url)('@duckdb/node-api/lib/vectors/dataAccessors.js') as {
  textDecoder: TextDecoder;
};
if (!accessors.textDecoder.ignoreBOM) accessors.textDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
