/**
 * Ferry's config file: the log level, the agent's sections and the service's, each bringing its schema
 * and its reader; the document is validated whole first, so every bad key is named at once.
 */
import { buildAgentConfig, agentSchema } from '../agent/config.js';
import type { DaemonConfig } from '../agent/agent.js';
import {
  ConfigError,
  documentValidator,
  interpolate,
  parseListen,
  readConfigDocument,
  readSection,
} from '../config/document.js';
import { buildServiceConfig, serviceSchema } from '../service/config.js';
import { objectSchema, oneOf, readOptions, type OptionSpecs } from '../config/options.js';

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

const validate = documentValidator({
  type: 'object',
  additionalProperties: false,
  properties: {
    log: objectSchema(LOG_OPTIONS),
    ...agentSchema,
    service: serviceSchema,
  },
});

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
