/**
 * Whether a line is the JSON text of a flat object (every member's value a string, number, true, false or
 * null) with at least one member, answered by one regular expression and nothing allocated. A log line
 * mostly is one; the agent then keeps its text and parses its fields only if something reads them
 * (agent/event.ts), since a JSON.parse whose result no one reads costs more than the check, and its garbage
 * besides (docs/benchmarks.md, bench:agent).
 *
 * What it accepts JSON.parse accepts, as an object (test/unit/util/flat-json.test.ts compares them on
 * seeded random lines). It need not accept every such object: nested values, or text around the braces,
 * go the way of JSON.parse. Every choice in the pattern is decided by the character at hand (a string
 * character is not a quote or a backslash, a value starts with its own character), so a line that fails
 * backtracks in time linear in its length; where most lines fail, their parser stops asking for a while
 * (FieldsOnRead).
 */

const WS = '[ \\t\\n\\r]*';
/** A string's characters as runs between escapes: a run is one greedy loop, not a choice per character. */
const CHARS = '[^"\\\\\\u0000-\\u001f]*';
const STRING = `"${CHARS}(?:\\\\(?:["\\\\/bfnrt]|u[0-9a-fA-F]{4})${CHARS})*"`;
const SCALAR = `(?:${STRING}|-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)`;
const MEMBER = `${WS}${STRING}${WS}:${WS}${SCALAR}${WS}`;
const FLAT_OBJECT = new RegExp(`^\\{${MEMBER}(?:,${MEMBER})*\\}$`);

/**
 * Longer lines are left to JSON.parse: a line that fails late (a nested value at its end) is walked back
 * over, at several times what JSON.parse costs for it.
 */
export const MAX_FLAT_CHECK_CHARS = 8 * 1024;

/** `{…}` with at least one member, every value a scalar, exactly as JSON.parse reads it; nothing around the braces. */
export function isFlatJsonObject(text: string): boolean {
  return text.length <= MAX_FLAT_CHECK_CHARS && FLAT_OBJECT.test(text);
}
