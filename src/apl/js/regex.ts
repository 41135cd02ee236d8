/**
 * Regular expressions of APL pipelines, read by re2js (a port of RE2, the store's engine through DuckDB):
 * the same syntax as the store (`(?i)`, `\pL`, `(?P<name>…)`, no lookbehind), and time linear in the
 * text, where JavaScript's backtracking engine let `^(a+)+$` stall the event loop for seconds.
 */
import { RE2JS } from 're2js';

/** @throws Error naming what is wrong in the pattern */
export function regexOf(pattern: string): RE2JS {
  return RE2JS.compile(pattern);
}

const cache = new Map<string, RE2JS | null>();
/** Patterns longer than this (taken from events) are not kept for the next event. */
const MAX_CACHED = 4096;

/** A pattern that comes with the events (not a constant): compiled once, null when it is no RE2 pattern. */
export function regex(pattern: string): RE2JS | null {
  let re = cache.get(pattern);
  if (re === undefined) {
    try {
      re = regexOf(pattern);
    } catch {
      re = null;
    }
    if (pattern.length <= MAX_CACHED) {
      if (cache.size > 1000) cache.clear();
      cache.set(pattern, re);
    }
  }
  return re;
}

/** Whether the pattern matches anywhere in the text (DuckDB's regexp_matches). */
export function matches(re: RE2JS, text: string): boolean {
  return re.matcher(text).find();
}
