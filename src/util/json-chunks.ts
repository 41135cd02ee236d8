/**
 * A value's JSON text in chunks of about CHUNK_CHARS, the text JSON.stringify (or `stringify`) would make
 * for it. An answer made whole is one string as long as the values it holds, and then a buffer as long
 * again: a 32 MB page cost 64 MB besides its values while it was sent (docs/benchmarks.md). Made a chunk at
 * a time as the client reads, the text held is a chunk's.
 */

/** Characters a chunk holds before it is handed on: a few socket writes' worth. */
const CHUNK_CHARS = 64 * 1024;

/**
 * Values written by one `stringify` call: an array's values together until their text reaches this, and
 * any value up to it whole. Only a larger array or object is walked into, so the calls stay few (one a
 * leaf cost seconds for an answer of many small objects, each call of an exact writer dearer still).
 */
const RUN_CHARS = 16 * 1024;

/** Levels walked into at most; below, a value is written whole however large (an answer is a few levels deep). */
const WALK_DEPTH = 8;

/**
 * The JSON text of `value` in chunks. `stringify` writes runs of an array's values (as an array) and
 * whole values; it is JSON.stringify unless the caller needs another (exact 64-bit integers). Keys whose
 * values JSON leaves out (undefined, functions, symbols) are left out.
 */
export function* jsonChunks(
  value: unknown,
  stringify: (v: unknown) => string = JSON.stringify,
): Generator<string, void, undefined> {
  let pending = '';
  for (const piece of pieces(value, stringify, 0)) {
    pending += piece;
    if (pending.length >= CHUNK_CHARS) {
      yield pending;
      pending = '';
    }
  }
  if (pending) yield pending;
}

/** Arrays and plain objects can be walked into; anything else (a Date, a Buffer: toJSON) is written as JSON writes it. */
function isContainer(v: unknown): v is object {
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v)) return true;
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}

/** About the characters of a value's JSON, counted only until they pass `budget`. */
function sizeOf(v: unknown, budget: number): number {
  if (typeof v === 'string') return v.length + 2;
  if (!isContainer(v)) return 8;
  let n = 2;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length && n <= budget; i++) n += sizeOf(v[i], budget - n) + 1;
  } else {
    for (const key in v) {
      n += key.length + 4 + sizeOf((v as Record<string, unknown>)[key], budget - n);
      if (n > budget) break;
    }
  }
  return n;
}

/** Whether a value of this (sizeOf) size is walked into rather than written whole. */
const walks = (v: unknown, size: number, depth: number) => size > RUN_CHARS && depth < WALK_DEPTH && isContainer(v);

/** A value: walked into when it is large, else written whole. */
function* pieces(v: unknown, stringify: (v: unknown) => string, depth: number): Generator<string, void, undefined> {
  if (walks(v, sizeOf(v, RUN_CHARS), depth)) yield* walk(v as object, stringify, depth);
  // What JSON.stringify writes for a value on its own; undefined only at the top (an array's is null).
  else yield (stringify(v) as string | undefined) ?? 'null';
}

/** A large array or object, part by part: an array's smaller values in runs, each run one stringify call. */
function* walk(v: object, stringify: (v: unknown) => string, depth: number): Generator<string, void, undefined> {
  if (Array.isArray(v)) {
    yield '[';
    for (let i = 0; i < v.length;) {
      if (i > 0) yield ',';
      let size = sizeOf(v[i], RUN_CHARS);
      if (walks(v[i], size, depth + 1)) {
        yield* walk(v[i] as object, stringify, depth + 1);
        i++;
        continue;
      }
      // A run of values, as one stringify call (its brackets left off).
      let j = i + 1;
      let chars = size;
      while (j < v.length && chars < RUN_CHARS) {
        size = sizeOf(v[j], RUN_CHARS);
        if (walks(v[j], size, depth + 1)) break;
        chars += size;
        j++;
      }
      yield stringify(v.slice(i, j)).slice(1, -1);
      i = j;
    }
    yield ']';
  } else {
    yield '{';
    let first = true;
    for (const key of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[key];
      if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
      yield `${first ? '' : ','}${JSON.stringify(key)}:`;
      first = false;
      yield* pieces(x, stringify, depth + 1);
    }
    yield '}';
  }
}
