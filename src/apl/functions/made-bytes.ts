/**
 * Helpers for the catalog entries that say how long a call's value may be (ScalarFunction.madeBytes),
 * read by the estimate of the text a query makes (../binder/made-text.ts).
 */
import type { SizedArg } from './catalog.js';
import type { LiteralValue } from '../parser/ast.js';

/** The text of a number, a time or a boolean, at most. */
export const SCALAR_TEXT_BYTES = 24;

/**
 * How much longer a text gets quoted as a JSON string, as the estimate counts it: a quote or a backslash
 * takes two bytes. A control character takes six, which text rarely holds: a text of nothing else makes
 * three times the estimate, once (the quoted text is plain ASCII).
 */
export const JSON_QUOTING = 2;

/** An argument's constant value as a finite number, if it has one (a NaN count is a count read from the rows). */
export function constantNumber(a: { constant?: { value: LiteralValue } } | undefined): number | undefined {
  const v = a?.constant?.value;
  const n = typeof v === 'number' || typeof v === 'bigint' ? Number(v) : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

/** An argument's constant value as a text, if it has one. */
export function constantText(a: SizedArg | undefined): string | undefined {
  const v = a?.constant?.value;
  return typeof v === 'string' ? v : undefined;
}

/** The longest of the arguments. */
export const longest = (args: (SizedArg | undefined)[]): number => Math.max(0, ...args.map((a) => a?.bytes ?? 0));

/** The arguments together. */
export const together = (args: (SizedArg | undefined)[]): number => args.reduce((n, a) => n + (a?.bytes ?? 0), 0);

/**
 * replace_regex(re, rewrite, s): every match (one at each position, if the expression matches nothing)
 * becomes the rewrite, whose references to groups (`$1`, `\1`) each repeat at most the text matched.
 */
export function regexReplacedBytes([re, rewrite, s]: SizedArg[]): number {
  const text = constantText(rewrite);
  const references = text !== undefined ? (text.match(/[$\\]\d/g)?.length ?? 0) : Math.ceil(rewrite!.bytes / 2);
  // A constant expression that matches no empty text matches a byte at least, which its rewrite replaces.
  const shortest = matchesEmpty(constantText(re)) ? 0 : 1;
  const matches = shortest === 0 ? s!.bytes + 1 : s!.bytes;
  const literal = text !== undefined ? Buffer.byteLength(text.replace(/[$\\]\d/g, '')) : rewrite!.bytes;
  return s!.bytes + matches * Math.max(0, literal - shortest) + references * s!.bytes;
}

/** Whether a regular expression may match an empty text: unknown (not a constant, not one JavaScript reads) counts as yes. */
function matchesEmpty(re: string | undefined): boolean {
  if (re === undefined) return true;
  try {
    return new RegExp(`^(?:${re})`).test('') || new RegExp(re).test('');
  } catch {
    return true;
  }
}

/** replace_string(lookup, rewrite, text): each occurrence of the lookup (a byte at least) may become the rewrite. */
export function stringReplacedBytes([lookup, rewrite, s]: SizedArg[]): number {
  const text = constantText(lookup);
  const shortest = Math.max(1, text === undefined ? 1 : Buffer.byteLength(text));
  return s!.bytes + Math.floor(s!.bytes / shortest) * Math.max(0, rewrite!.bytes - shortest);
}

/** An array function whose value holds `fill` at each element of `array` (each element two bytes of it at least: a value and a comma). */
export const filledBytes = (array: SizedArg | undefined, fill: SizedArg | undefined): number =>
  (array?.bytes ?? 0) + Math.ceil((array?.bytes ?? 0) / 2) * (JSON_QUOTING * (fill?.bytes ?? 0) + 2);
