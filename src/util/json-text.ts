/**
 * JSON text from the store (arrays, maps, dynamic values) as a JS value for an answer. A value nested
 * deeper than MAX_JSON_NESTING stays its JSON text: parsed, it would overflow the stack of the
 * serialiser that writes the answer (JSON.stringify recurses), and every query returning it would fail.
 */
export const MAX_JSON_NESTING = 100;

export function parseJsonText(text: string): unknown {
  // Nesting deeper than the cap takes more than twice as many characters.
  if (text.length > 2 * MAX_JSON_NESTING && nestingOf(text) > MAX_JSON_NESTING) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count). */
export function nestingOf(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // an escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}
