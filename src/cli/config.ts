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

export type FerryConfig = DaemonConfig;

const validate = documentValidator({
  type: 'object',
  additionalProperties: false,
  properties: {
    log: {
      type: 'object',
      additionalProperties: false,
      properties: { level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] } },
    },
    ...agentSchema,
    service: serviceSchema,
  },
});

/** Validates a parsed document and applies defaults. Pure: no I/O. */
export function buildConfig(doc: unknown, env: NodeJS.ProcessEnv = process.env): FerryConfig {
  const raw = validate(interpolate(doc ?? {}, env));
  const service = buildServiceConfig(raw.service);
  const agent = readSection(() => buildAgentConfig(raw, service.enabled, parseListen));
  return { logLevel: (raw.log as { level?: string } | undefined)?.level ?? 'info', service, agent };
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
