/**
 * Row cursors: an event's position in time order, (_time, ingest sequence). Opaque to clients; equal events
 * (same _time) still have distinct cursors, so paging by cursor neither loses nor repeats them.
 */
import type { Cursor } from '../../apl/compiler/compiler.js';

export function encodeCursor(c: Cursor): string {
  const t = c.timeNs < 0n ? `-${(-c.timeNs).toString(36)}` : c.timeNs.toString(36);
  return `${t}_${c.seq.toString(36)}`;
}

export function decodeCursor(text: string): Cursor | undefined {
  const m = /^(-?[0-9a-z]{1,14})_([0-9a-z]{1,13})$/.exec(text);
  if (!m) return undefined;
  const parse36 = (s: string) => {
    const neg = s.startsWith('-');
    let v = 0n;
    for (const ch of neg ? s.slice(1) : s) v = v * 36n + BigInt(parseInt(ch, 36));
    return neg ? -v : v;
  };
  return { timeNs: parse36(m[1]!), seq: parse36(m[2]!) };
}

export function compareCursors(a: Cursor, b: Cursor): number {
  if (a.timeNs !== b.timeNs) return a.timeNs < b.timeNs ? -1 : 1;
  return a.seq === b.seq ? 0 : a.seq < b.seq ? -1 : 1;
}
