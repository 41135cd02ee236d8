/**
 * Compiles the config file's schema ahead of time into dist/src/cli/config-validator.cjs (ajv's standalone
 * code), so a command that reads a config does not compile the schema at every start (docs/benchmarks.md).
 * The file carries the hash of the schema it was made from; config.ts uses it only when that matches.
 *
 * Run by `npm run build` after tsc: node dist/src/cli/build-config-validator.js
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import { AJV_OPTIONS, schemaHash } from '../config/document.js';
import { CONFIG_SCHEMA, PRECOMPILED_VALIDATOR_FILE } from './config.js';

const ajv = new Ajv({ ...AJV_OPTIONS, code: { source: true } });
// A CommonJS module whose default export TypeScript sees as the module itself.
const standaloneCode = standalone as unknown as typeof standalone.default;
const code = standaloneCode(ajv, ajv.compile(CONFIG_SCHEMA));
const file = fileURLToPath(new URL(`./${PRECOMPILED_VALIDATOR_FILE}`, import.meta.url));
writeFileSync(file, `${code}\nmodule.exports.schemaHash = ${JSON.stringify(schemaHash(CONFIG_SCHEMA))};\n`);
console.log(`config validator compiled: ${file} (${code.length} bytes)`);
