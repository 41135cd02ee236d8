/**
 * What the query languages' lexers and errors share (APL in src/apl, MPL in src/mpl): positions in a query's
 * text as line and column, an error that names them, and the blanks and `//` comments between tokens.
 */

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

/** An error in a query's text: its message begins with the line and column of the text at fault. */
export class SourceError extends Error {
  readonly line: number;
  readonly column: number;
  constructor(
    readonly reason: string,
    source: string,
    readonly offset: number,
  ) {
    const pos = positionOf(source, offset);
    super(`line ${pos.line}, column ${pos.column}: ${reason}`);
    this.line = pos.line;
    this.column = pos.column;
  }
}

/** The offset of the next token from `i`: past spaces, tabs, line ends and `//` comments. */
export function skipBlank(source: string, i: number): number {
  for (;;) {
    const c = source[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') i++;
    else if (c === '/' && source[i + 1] === '/') while (i < source.length && source[i] !== '\n') i++;
    else return i;
  }
}
