/**
 * Why an ingest body cannot be read; the HTTP layer answers each kind with its status (400, 413, 415, and
 * 503 with Retry-After for `busy`: the memory for bodies held at once is taken).
 */
export class IngestBodyError extends Error {
  constructor(
    readonly kind: 'invalid' | 'too_large' | 'unsupported' | 'busy',
    message: string,
  ) {
    super(message);
    this.name = 'IngestBodyError';
  }
}

export const invalidBody = (message: string) => new IngestBodyError('invalid', message);
