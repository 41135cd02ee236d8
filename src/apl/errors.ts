/** APL errors carry the position of the offending text, so a user can find it in a long query. */
import { SourceError } from '../util/source-text.js';

export { positionOf, type SourcePos } from '../util/source-text.js';

/** A query the engine cannot run: a syntax error, an unknown name, a type error or an unsupported feature. */
export class AplError extends SourceError {
  constructor(
    reason: string,
    source: string,
    offset: number,
    readonly kind: 'invalid' | 'not_found' = 'invalid',
  ) {
    super(reason, source, offset);
    this.name = 'AplError';
  }
}
