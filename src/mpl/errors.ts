/** MPL errors name the line and column of the text at fault, as APL's do (util/source-text.ts). */
import { SourceError } from '../util/source-text.js';

export class MplError extends SourceError {
  constructor(reason: string, source: string, offset: number) {
    super(reason, source, offset);
    this.name = 'MplError';
  }
}

/** A query past one of its bounds (values filled on a grid, stages, series): a 400 saying what to narrow. */
export class MplLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MplLimitError';
  }
}
