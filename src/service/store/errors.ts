/** Errors the store raises; the HTTP layer maps each kind to its status. */
export type StoreErrorKind = 'not_found' | 'conflict' | 'invalid' | 'too_large' | 'forbidden';

export class StoreError extends Error {
  constructor(
    readonly kind: StoreErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

export const notFound = (what: string) => new StoreError('not_found', `${what} not found`);
export const invalid = (message: string) => new StoreError('invalid', message);
export const conflict = (message: string) => new StoreError('conflict', message);

/**
 * Something that exists but the caller may not see: answered like one that does not exist (404), and
 * counted as a refusal in the audit trail.
 */
export class HiddenError extends StoreError {
  constructor(what: string) {
    super('not_found', `${what} not found`);
  }
}

export const hidden = (what: string) => new HiddenError(what);
