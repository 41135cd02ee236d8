/** MPL errors name the line and column of the text at fault, as APL's do (util/source-text.ts). */
import { SourceError } from '../util/source-text.js';

export class MplError extends SourceError {
  constructor(reason: string, source: string, offset: number) {
    super(reason, source, offset);
    this.name = 'MplError';
  }
}
