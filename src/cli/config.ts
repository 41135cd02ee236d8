/**
 * Ferry's config file: the log level, the agent's sections and the service's, each bringing its schema
 * and its reader; the document is validated whole first, so every bad key is named at once.
 */
import { createRequire } from 'node:module';
import { buildAgentConfig, agentSchema } from '../agent/config.js';
import type { DaemonConfig } from '../agent/agent.js';
import {
  ConfigError,
  documentValidator,
  interpolate,
  type PrecompiledValidator,
  parseListen,
  readConfigDocument,
  readSection,
} from '../config/document.js';
import { buildServiceConfig, serviceSchema } from '../service/config.js';
import { objectSchema, oneOf, readOptions, type JsonSchema, type OptionSpecs } from '../config/options.js';

export type FerryConfig = DaemonConfig;

/** The `log:` section. */
export const LOG_OPTIONS = {
  level: oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], 'info').doc(
    'the lowest level logged (`silent`: none)',
  ),
  format: oneOf(['text', 'json']).doc(
    'how log lines are written to stderr: `text` for a person (`2026-11-26T00:20:01.123Z INFO  file opened path=…`), `json` for a collector (one object a line); default: text when stderr is a terminal, JSON otherwise',
  ),
} satisfies OptionSpecs;

/** The whole config file's schema. */
export const CONFIG_SCHEMA: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    log: objectSchema(LOG_OPTIONS),
    ...agentSchema,
    service: serviceSchema,
  },
};

/** The file `npm run build` writes beside this module's compiled code (build-config-validator.ts). */
export const PRECOMPILED_VALIDATOR_FILE = 'config-validator.cjs';

/** The validator compiled by the build, if this is a build (run from the sources there is none). */
function precompiled(): PrecompiledValidator | undefined {
  try {
    return createRequire(import.meta.url)(`./${PRECOMPILED_VALIDATOR_FILE}`) as PrecompiledValidator;
  } catch {
    return undefined;
  }
}

const validate = documentValidator(CONFIG_SCHEMA, precompiled);

/** Validates a parsed document and applies defaults. Pure: no I/O. */
export function buildConfig(doc: unknown, env: NodeJS.ProcessEnv = process.env): FerryConfig {
  const raw = validate(interpolate(doc ?? {}, env));
  const service = buildServiceConfig(raw.service);
  const agent = readSection(() => buildAgentConfig(raw, service.enabled));
  const log = readSection(() => readOptions(LOG_OPTIONS, raw.log, 'log'));
  return { logLevel: log.level, logFormat: log.format, service, agent };
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): FerryConfig {
  const doc = readConfigDocument(file);
  try {
    return buildConfig(doc, env);
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`${file}: ${e.message}`, e.path);
    throw e;
  }
}

export { ConfigError, parseListen };
