/**
 * Helpers for the catalog entries that say how long a call's value may be (ScalarFunction.madeBytes),
 * read by the estimate of the text a query makes (../binder/made-text.ts).
 */
import type { SizedArg } from './catalog.js';

/** The text of a number, a time or a boolean, at most. */
export const SCALAR_TEXT_BYTES = 24;

/**
 * How much longer a text gets quoted as a JSON string, as the estimate counts it: a quote or a backslash
 * takes two bytes. A control character takes six, which text rarely holds: a text of nothing else makes
 * three times the estimate, once (the quoted text is plain ASCII).
 */
export const JSON_QUOTING = 2;

/** An argument's constant value as a number, if it has one. */
export function constantNumber(a: SizedArg | undefined): number | undefined {
  const v = a?.constant?.value;
  return typeof v === 'number' || typeof v === 'bigint' ? Number(v) : undefined;
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
export function regexReplacedBytes([, rewrite, s]: SizedArg[]): number {
  const text = constantText(rewrite);
  const references = text !== undefined ? (text.match(/[$\\]\d/g)?.length ?? 0) : Math.ceil(rewrite!.bytes / 2);
  return s!.bytes + (s!.bytes + 1) * rewrite!.bytes + references * s!.bytes;
}
