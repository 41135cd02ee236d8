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
 * How a key is searched for (fastCut): its quoted text, and a piece of it to search for first (`anchor`,
 * `back` characters into it). V8 searches a pattern of seven or more characters by a table it builds for
 * each search, which for a line of a few hundred characters costs more than the search; a shorter one it
 * finds by its first character, so the piece starts at the character of the key rarest in the first text
 * it is searched in (lines of one source are alike).
 */
interface KeySearch {
  quoted: string;
  anchor: string;
  back: number;
}

/**
 * Keys searched for, by their search: built the second time a key is cut (a key seen once, as keys that
 * differ from event to event are, is cut by the walk, which costs no more), null for a key the walk always
 * cuts. Keys longer than MAX_SEARCHED_KEY are always walked: a search's first text is read once per
 * character of the key that is different.
 */
const keySearches = new Map<string, KeySearch | null | 'seen'>();
const ANCHOR_LENGTH = 6;
const MAX_SEARCHED_KEY = 64;

/**
 * Keys of none of the characters that JSON's structure or escapes use: their quoted text can only be
 * found where a string holds exactly the key, in a text with no backslash (every quote there opens or
 * closes a string, and none of these characters may follow a closing one).
 */
const PLAIN_KEY = /^[^"\\,:{}[\]\s\u0000-\u001f]+$/;

function keySearch(key: string, sample: string): KeySearch | null {
  const known = keySearches.get(key);
  if (known !== undefined && known !== 'seen') return known;
  if (keySearches.size >= 256) keySearches.clear();
  if (key.length > MAX_SEARCHED_KEY || !PLAIN_KEY.test(key)) {
    keySearches.set(key, null);
    return null;
  }
  if (known === undefined) {
    keySearches.set(key, 'seen');
    return null;
  }
  const search = searchFor(`"${key}"`, sample);
  keySearches.set(key, search);
  return search;
}

/** Where to anchor a key's search: at the character of it (not the last five) that `sample` has fewest of. */
function searchFor(quoted: string, sample: string): KeySearch {
  const counts = new Map<number, number>();
  for (let i = 0; i <= quoted.length - ANCHOR_LENGTH || i === 0; i++) counts.set(quoted.charCodeAt(i), 0);
  for (let i = 0; i < sample.length; i++) {
    const c = sample.charCodeAt(i);
    const n = counts.get(c);
    if (n !== undefined) counts.set(c, n + 1);
  }
  let back = 0;
  for (let i = 1; i <= quoted.length - ANCHOR_LENGTH; i++)
    if (counts.get(quoted.charCodeAt(i))! < counts.get(quoted.charCodeAt(back))!) back = i;
  return { quoted, anchor: quoted.slice(back, back + ANCHOR_LENGTH), back };
}

/** Where the key's quoted text starts in `text`, from `from` on; -1 if nowhere. */
function findKey(text: string, s: KeySearch, from: number): number {
  for (let a = text.indexOf(s.anchor, from + s.back); a >= 0; a = text.indexOf(s.anchor, a + 1)) {
    if (text.startsWith(s.quoted, a - s.back)) return a - s.back;
  }
  return -1;
}

/**
 * Whether a JSON text without a backslash surely has no member named `key`, at any depth: the key's quoted
 * text is nowhere in it (a text without escapes writes each key as itself). False when it cannot tell.
 */
export function plainTextLacksKey(text: string, key: string): boolean {
  const search = keySearch(key, text);
  if (search) return findKey(text, search, 0) < 0;
  const quoted = JSON.stringify(key);
  return !quoted.includes('\\') && !text.includes(quoted);
}

/**
 * The common case of a line and a key its object has: no backslash in the text and the key's quoted text
 * found once, which can then only be the member. Native searches instead of a walk over every member.
 * Null when this cannot tell (the walk decides).
 */
function fastCut(text: string, key: string): string | undefined | null {
  const search = keySearch(key, text);
  if (search === null || text.indexOf('\\') >= 0) return null;
  const at = findKey(text, search, 0);
  if (at < 0 || findKey(text, search, at + 1) >= 0) return null;
  const colon = skipWs(text, at + search.quoted.length);
  if (text.charCodeAt(colon) !== 0x3a) return null;
  const end = skipValue(text, skipWs(text, colon + 1));
  if (end < 0) return null;
  let before = at - 1;
  while (before > 0 && isWs(text.charCodeAt(before))) before--;
  const c = text.charCodeAt(before);
  if (c === 0x2c) {
    // Not the first member: from the end of the one before (its comma with it).
    while (before > 0 && isWs(text.charCodeAt(before - 1))) before--;
    return text.slice(0, before) + text.slice(end);
  }
  if (c !== 0x7b) return null;
  const next = skipWs(text, end);
  if (text.charCodeAt(next) === 0x7d) return undefined;
  return text.charCodeAt(next) === 0x2c ? text.slice(0, at) + text.slice(skipWs(text, next + 1)) : null;
}

/**
 * `text` without its members named `key`; the rest of the text is kept as it is. Undefined when the text
 * is not an object this can read, or nothing would be left.
 * @param present the caller knows the object has a top-level member with the key (its parsed fields do)
 */
export function withoutMember(text: string, key: string, present = false): string | undefined {
  if (present) {
    const cut = fastCut(text, key);
    if (cut !== null) return cut;
  }
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
