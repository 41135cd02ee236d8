/** APL errors carry the position of the offending text, so a user can find it in a long query. */

export interface SourcePos {
  line: number;
  column: number;
}

/** Line and column (both 1-based) of an offset in the query text. */
export function positionOf(source: string, offset: number): SourcePos {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < source.length; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/** A query the engine cannot run: a syntax error, an unknown name, a type error or an unsupported feature. */
export class AplError extends Error {
  readonly line: number;
  readonly column: number;
  constructor(
    readonly reason: string,
    source: string,
    readonly offset: number,
    readonly kind: 'invalid' | 'not_found' = 'invalid',
  ) {
    const pos = positionOf(source, offset);
    super(`line ${pos.line}, column ${pos.column}: ${reason}`);
    this.name = 'AplError';
    this.line = pos.line;
    this.column = pos.column;
  }
}
