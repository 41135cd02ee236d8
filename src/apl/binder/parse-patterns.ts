/**
 * What `parse` and `parse-kv` capture, as the expressions that capture it: one regular expression per
 * parse (each captured name a group of it), one per key of parse-kv. Shared by queries (tabular.ts) and
 * event pipelines (event-pipeline.ts), so both read a line the same way.
 */
import type { Operator } from '../parser/ast.js';
import { TYPE_NAMES } from '../parser/parser.js';
import { regexEscape } from '../functions/sql.js';
import type { AplType } from '../types.js';
import type { BExpr } from './bound.js';
import { conversionFor } from './relation.js';

/** A name a pattern captures, and the expression of its value (over the operator's source text). */
export interface Capture {
  name: string;
  type: AplType;
  pos: number;
  expr: BExpr;
}

/** The text a parse reads: a string as it is, anything else through tostring. */
function textOf(e: BExpr, pos: number): BExpr {
  return e.type === 'string' ? e : { k: 'call', type: 'string', fn: 'tostring', args: [e], pos };
}

/** The value of a capture in its type (a string, or converted to the `name:type` asked). */
function typed(captured: BExpr, type: AplType, pos: number): BExpr {
  return type === 'string' ? captured : { k: 'call', type, fn: conversionFor(type), args: [captured], pos };
}

/**
 * parse / parse-where: the pattern's regular expression over the source text, and each name's capture.
 * `matches` is the test parse-where keeps rows by.
 */
export function parseCaptures(
  op: Extract<Operator, { op: 'parse' | 'parse-where' }>,
  text: BExpr,
): { captures: Capture[]; matches: BExpr } {
  const source = textOf(text, op.pos);
  let re = op.kind === 'regex' ? '' : '^';
  const names: { name: string; type: AplType; group: number; pos: number }[] = [];
  const lastName = op.parts.map((p) => p.kind).lastIndexOf('name');
  op.parts.forEach((p, i) => {
    const last = i === op.parts.length - 1 || (i === lastName && op.parts.slice(i + 1).every((q) => q.kind === 'star'));
    if (p.kind === 'const') re += op.kind === 'regex' ? p.text : regexEscape(p.text);
    else if (p.kind === 'star') re += i === op.parts.length - 1 ? '.*' : '.*?';
    else {
      const type = p.type ? TYPE_NAMES[p.type]! : 'string';
      const group =
        type === 'long' && op.kind !== 'relaxed'
          ? '(-?\\d+)'
          : type === 'real' && op.kind !== 'relaxed'
            ? '(-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)'
            : last
              ? '(.*)'
              : '(.*?)';
      re += group;
      names.push({ name: p.name, type, group: names.length + 1, pos: p.pos });
    }
  });
  const pattern: BExpr = { k: 'lit', type: 'string', value: re };
  const captures = names.map((n) => ({
    name: n.name,
    type: n.type,
    pos: n.pos,
    expr: typed(
      {
        k: 'call',
        type: 'string',
        fn: 'parse_capture#',
        args: [source, pattern, { k: 'lit', type: 'long', value: BigInt(n.group) }],
        pos: n.pos,
      },
      n.type,
      n.pos,
    ),
  }));
  const matches: BExpr = { k: 'call', type: 'bool', fn: 'matches regex', args: [source, pattern], pos: op.pos };
  return { captures, matches };
}

/** parse-kv: each key's value is the text after `key<kv_delimiter>` up to the next pair delimiter (or in quotes). */
export function parseKvCaptures(op: Extract<Operator, { op: 'parse-kv' }>, text: BExpr): Capture[] {
  const source = textOf(text, op.pos);
  const pd = regexEscape(op.pairDelimiter);
  const q = op.quote ? regexEscape(op.quote) : undefined;
  return op.keys.map((k) => {
    const value = q ? `(?:${q}([^${q}]*)${q}|(.*?))(?:${pd}|$)` : `(.*?)(?:${pd}|$)`;
    const pattern = `(?:^|${pd})\\s*${regexEscape(k.name)}\\s*${regexEscape(op.kvDelimiter)}${value}`;
    const type = k.type ? TYPE_NAMES[k.type]! : 'string';
    return {
      name: k.name,
      type,
      pos: k.pos,
      expr: typed(
        {
          k: 'call',
          type: 'string',
          fn: 'parse_kv#',
          args: [
            source,
            { k: 'lit', type: 'string', value: pattern },
            { k: 'lit', type: 'bool', value: q !== undefined },
          ],
          pos: k.pos,
        },
        type,
        k.pos,
      ),
    };
  });
}
