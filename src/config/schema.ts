/** JSON schema of the Ferry config file. ajv validates against it; errors name the key path. */

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
        retention: {
          type: 'object',
          additionalProperties: false,
          properties: {
            default_days: { type: 'integer', minimum: 0 },
            check_interval: { type: 'string' },
          },
        },
      },
    },
  },
} as const;
