/** MPL errors name the line and column of the text at fault, as APL's do (apl/errors.ts's positions). */
import { positionOf } from '../apl/errors.js';

export class MplError extends Error {
  readonly line: number;
  readonly column: number;
  constructor(
    readonly reason: string,
    source: string,
    readonly offset: number,
  ) {
    const pos = positionOf(source, offset);
    super(`line ${pos.line}, column ${pos.column}: ${reason}`);
    this.name = 'MplError';
    this.line = pos.line;
    this.column = pos.column;
  }
}
