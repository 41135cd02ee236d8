/** Token kinds of APL. Keywords are identifiers; the parser gives them meaning by position. */
export type TokenKind =
  | 'ident' // names, keywords, hyphenated operator names (project-away), negated operators (!contains)
  | 'string' // a string literal, value already unescaped
  | 'int'
  | 'real'
  | 'timespan' // value in ns
  | 'raw' // the raw text inside datetime(...)
  | 'punct'
  | 'eof';

export interface Token {
  kind: TokenKind;
  /** The source text of the token (for punct and ident, what to match on). */
  text: string;
  /** Parsed value: string for strings/raw, bigint for int/timespan, number for real. */
  value?: string | bigint | number;
  /** Offset of the first character. */
  pos: number;
  end: number;
}
