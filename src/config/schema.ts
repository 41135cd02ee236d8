import { MAX_EXPRESSION_DEPTH } from '../service/query/limits.js';
/** JSON schema of the Ferry config file. ajv validates against it; errors name the key path. */

const size = { type: ['string', 'integer'] } as const;
const duration = { type: 'string' } as const;
const names = { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 } as const;
const stringMap = { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } } as const;
/** Names of sources, transforms and sinks: they become metric labels and file names. */
const componentName = '^[A-Za-z0-9_][A-Za-z0-9_.-]*$';

const source = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { enum: ['file', 'stdin'] },
    include: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
    exclude: { type: 'array', items: { type: 'string', minLength: 1 } },
    start_at: { enum: ['beginning', 'end'] },
    max_line_bytes: size,
    fingerprint_bytes: { type: 'integer', minimum: 16, maximum: 65536 },
    poll_interval: duration,
    rotate_wait: duration,
    checkpoint_interval: duration,
  },
  if: { properties: { type: { const: 'file' } } },
  then: { required: ['include'] },
} as const;

const transform = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'inputs'],
  properties: {
    type: { enum: ['parse', 'multiline', 'enrich'] },
    inputs: names,
    // parse
    parser: { enum: ['json', 'logfmt', 'plain', 'regex', 'syslog', 'docker', 'cri'] },
    pattern: { type: 'string', minLength: 1 },
    rfc: { enum: ['3164', '5424', 'auto'] },
    timezone: { type: 'string', minLength: 1 },
    // multiline
    preset: { enum: ['java', 'python', 'go'] },
    start: { type: 'string', minLength: 1 },
    continuation: { type: 'string', minLength: 1 },
    timeout: duration,
    max_lines: { type: 'integer', minimum: 1 },
    max_bytes: size,
    // enrich
    host: { type: ['boolean', 'string'] },
    source_path: { type: ['boolean', 'string'] },
    fields: stringMap,
  },
  allOf: [
    { if: { properties: { type: { const: 'parse' } } }, then: { required: ['parser'] } },
    { if: { properties: { parser: { const: 'regex' } }, required: ['parser'] }, then: { required: ['pattern'] } },
  ],
} as const;

const sink = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'inputs', 'dataset'],
  properties: {
    type: { enum: ['axiom', 'local'] },
    inputs: names,
    dataset: { type: 'string', minLength: 1 },
    url: { type: 'string', pattern: '^https?://' },
    token: { type: 'string', minLength: 1 },
    compression: { enum: ['gzip', 'zstd', 'none'] },
    concurrency: { type: 'integer', minimum: 1, maximum: 64 },
    timeout: duration,
    timestamp_field: { type: 'string', minLength: 1 },
    timestamp_format: { type: 'string', minLength: 1 },
    labels: stringMap,
    dead_letter: { type: 'string', minLength: 1 },
    batch: {
      type: 'object',
      additionalProperties: false,
      properties: { max_events: { type: 'integer', minimum: 1 }, max_bytes: size, timeout: duration },
    },
    queue: {
      type: 'object',
      additionalProperties: false,
      properties: { max_bytes: size, when_full: { enum: ['block', 'drop_newest'] } },
    },
    retry: {
      type: 'object',
      additionalProperties: false,
      properties: { initial_backoff: duration, max_backoff: duration, max_attempts: { type: 'integer', minimum: 0 } },
    },
  },
  if: { properties: { type: { const: 'axiom' } } },
  then: { required: ['url', 'token'] },
} as const;

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    log: {
      type: 'object',
      additionalProperties: false,
      properties: {
        level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] },
      },
    },
    agent: {
      type: 'object',
      additionalProperties: false,
      properties: {
        data_dir: { type: 'string', minLength: 1 },
        api: {
          type: 'object',
          additionalProperties: false,
          properties: { enabled: { type: 'boolean' }, listen: { type: 'string', pattern: '^.+:\\d+$' } },
        },
        shutdown_timeout: duration,
      },
    },
    sources: { type: 'object', propertyNames: { pattern: componentName }, additionalProperties: source },
    transforms: { type: 'object', propertyNames: { pattern: componentName }, additionalProperties: transform },
    sinks: { type: 'object', propertyNames: { pattern: componentName }, additionalProperties: sink },
    service: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean' },
        listen: { type: 'string', pattern: '^.+:\\d+$' },
        data_dir: { type: 'string', minLength: 1 },
        memory_limit: { type: ['string', 'integer'] },
        checkpoint_threshold: { type: ['string', 'integer'] },
        threads: { type: 'integer', minimum: 1 },
        max_body_bytes: { type: ['string', 'integer'] },
        max_decompressed_bytes: { type: ['string', 'integer'] },
        max_fields_per_dataset: { type: 'integer', minimum: 1 },
        query_timeout: { type: 'string' },
        query_limits: {
          type: 'object',
          additionalProperties: false,
          properties: {
            max_query_bytes: { type: ['string', 'integer'] },
            max_stages: { type: 'integer', minimum: 1 },
            max_columns: { type: 'integer', minimum: 1 },
            max_expression_depth: { type: 'integer', minimum: 1, maximum: MAX_EXPRESSION_DEPTH },
          },
        },
        retention: {
          type: 'object',
          additionalProperties: false,
          properties: {
            default_days: { type: 'integer', minimum: 0 },
            check_interval: { type: 'string' },
          },
        },
        monitors: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: { type: 'boolean' },
            concurrency: { type: 'integer', minimum: 1, maximum: 64 },
            runs_dataset: { type: 'string', minLength: 1 },
          },
        },
        notifiers: {
          type: 'object',
          additionalProperties: false,
          properties: {
            timeout: duration,
            attempts: { type: 'integer', minimum: 1, maximum: 20 },
            pagerduty_url: { type: 'string', minLength: 1 },
            opsgenie_url: { type: 'string', minLength: 1 },
            opsgenie_eu_url: { type: 'string', minLength: 1 },
            discord_url: { type: 'string', minLength: 1 },
            smtp: {
              type: 'object',
              additionalProperties: false,
              required: ['host', 'from'],
              properties: {
                host: { type: 'string', minLength: 1 },
                port: { type: 'integer', minimum: 1, maximum: 65535 },
                secure: { type: 'boolean' },
                starttls: { enum: ['required', 'opportunistic', 'off'] },
                user: { type: 'string' },
                password: { type: 'string' },
                from: { type: 'string', minLength: 3 },
              },
            },
          },
        },
      },
    },
  },
} as const;
