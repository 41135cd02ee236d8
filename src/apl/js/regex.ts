/**
 * Regular expressions of APL pipelines: RE2's syntax (the store's, through DuckDB) read by JavaScript's
 * engine, which takes the common part of it alike; a leading `(?i)` becomes the `i` flag.
 */

export function regexOf(pattern: string, flags = 'u'): RegExp {
  const ci = pattern.startsWith('(?i)');
  return new RegExp(ci ? pattern.slice(4) : pattern, ci ? `i${flags}` : flags);
}

const cache = new Map<string, RegExp | null>();

/** A pattern that comes with the events (not a constant): compiled once, null when JavaScript cannot read it. */
export function regex(pattern: string, flags: string): RegExp | null {
  const key = `${flags}/${pattern}`;
  let re = cache.get(key);
  if (re === undefined) {
    if (cache.size > 1000) cache.clear();
    try {
      re = regexOf(pattern, flags);
    } catch {
      re = null;
    }
    cache.set(key, re);
  }
  if (re) re.lastIndex = 0;
  return re;
}
