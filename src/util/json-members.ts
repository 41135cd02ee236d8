/**
 * The text of a JSON object without one of its top-level members, cut from the text as it is: an event
 * whose line is shipped as its own text (src/agent/event.ts) keeps it through `project-away`, where
 * serialising its fields again cost a quarter of the pipeline. The text must be JSON that JSON.parse read
 * as an object; every member with the key goes (JSON.parse keeps the last of duplicates).
 */

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipWs(s: string, i: number): number {
  while (i < s.length && isWs(s.charCodeAt(i))) i++;
  return i;
}

/**
 * Past the string that starts at `i` (its opening quote); -1 if it does not end. The closing quote is found
 * with indexOf (a character loop cost more than serialising the event again): a quote after an odd run of
 * backslashes is escaped.
 */
function skipString(s: string, i: number): number {
  for (let j = s.indexOf('"', i + 1); j >= 0; j = s.indexOf('"', j + 1)) {
    let k = j - 1;
    while (s.charCodeAt(k) === 0x5c) k--;
    if ((j - 1 - k) % 2 === 0) return j + 1;
  }
  return -1;
}

/** Past the value that starts at `i`; -1 if it does not end. */
function skipValue(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === 0x22) return skipString(s, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const d = s.charCodeAt(j);
      if (d === 0x22) {
        j = skipString(s, j) - 1;
        if (j < 0) return -1;
      } else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next separator.
  let j = i;
  while (j < s.length) {
    const d = s.charCodeAt(j);
    if (d === 0x2c || d === 0x7d || d === 0x5d || isWs(d)) break;
    j++;
  }
  return j > i ? j : -1;
}

/** Whether the key that spans [i, end) of the text (with its quotes) is `key`, without making a string of it. */
function isKey(text: string, i: number, end: number, key: string): boolean {
  const escaped = text.indexOf('\\', i + 1);
  if (escaped >= 0 && escaped < end) return (JSON.parse(text.slice(i, end)) as string) === key;
  return end - i - 2 === key.length && text.startsWith(key, i + 1);
}

/**
 * `text` without its members named `key`; the rest of the text is kept as it is. Undefined when the text
 * is not an object this can read, or nothing would be left.
 */
export function withoutMember(text: string, key: string): string | undefined {
  let i = skipWs(text, 0);
  if (text.charCodeAt(i) !== 0x7b) return undefined;
  i++;
  let members = 0;
  /** The member to cut (the first with the key), where it starts and ends, and where the one before ended. */
  let cut = -1;
  let cutStart = 0;
  let cutEnd = 0;
  let prevEnd = 0;
  let afterCut = -1;
  let more = false;
  let lastEnd = 0;
  for (let first = true; ; first = false) {
    i = skipWs(text, i);
    if (text.charCodeAt(i) === 0x7d) break;
    if (!first) {
      if (text.charCodeAt(i) !== 0x2c) return undefined;
      i = skipWs(text, i + 1);
    }
    if (text.charCodeAt(i) !== 0x22) return undefined;
    const start = i;
    const keyEnd = skipString(text, i);
    if (keyEnd < 0) return undefined;
    const match = isKey(text, start, keyEnd, key);
    i = skipWs(text, keyEnd);
    if (text.charCodeAt(i) !== 0x3a) return undefined;
    i = skipValue(text, skipWs(text, i + 1));
    if (i < 0) return undefined;
    if (cut >= 0 && afterCut < 0) afterCut = start;
    if (match) {
      if (cut < 0) {
        cut = members;
        cutStart = start;
        cutEnd = i;
        prevEnd = lastEnd;
        // Nothing after this member can be the key again when the rest has no backslash (no key written
        // with escapes) and not the key's own text: the rest need not be read.
        if (text.indexOf('\\', i) < 0 && text.indexOf(JSON.stringify(key), i) < 0) {
          const next = skipWs(text, i);
          if (cut > 0) return text.slice(0, prevEnd) + text.slice(cutEnd);
          return text.charCodeAt(next) === 0x7d
            ? undefined
            : text.slice(0, cutStart) + text.slice(skipWs(text, next + 1));
        }
      } else more = true;
    }
    lastEnd = i;
    members++;
  }
  if (cut < 0) return members === 0 ? undefined : text;
  if (members === 1) return undefined;
  // Not the first member: from the end of the one before (its comma with it); the first: up to the next.
  const rest = cut > 0 ? text.slice(0, prevEnd) + text.slice(cutEnd) : text.slice(0, cutStart) + text.slice(afterCut);
  // A key written twice (JSON.parse keeps the last): every member with it goes.
  return more ? withoutMember(rest, key) : rest;
}
