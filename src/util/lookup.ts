/**
 * Tables looked up by names users give (function names, units, formats, capability names): a plain
 * object answers `constructor`, `toString` or `__proto__` with what it inherits, which code then calls
 * or iterates as if it were an entry. These tables inherit nothing.
 */

/** A table with the given entries and no prototype: a name that is not an entry is undefined. */
export function lookupTable<T>(entries: Record<string, T>): Record<string, T> {
  return Object.assign(Object.create(null) as Record<string, T>, entries);
}

/** The value of an object's own key, never an inherited one. */
export function own<T>(o: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return o !== undefined && o !== null && Object.hasOwn(o, key) ? o[key] : undefined;
}
