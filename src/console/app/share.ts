/**
 * A query shared through the URL's fragment: its text and time range, never the token. The fragment is
 * not sent to the server and not in a Referer, so a shared link carries only what it shows.
 */
import type { TimeRange } from './time-range';

export interface SharedQuery {
  apl: string;
  range: TimeRange;
}

export function encodeShared(q: SharedQuery): string {
  const p = new URLSearchParams({ apl: q.apl });
  if ('last' in q.range) p.set('last', q.range.last);
  else {
    p.set('start', q.range.start);
    p.set('end', q.range.end);
  }
  return `#/query?${p.toString()}`;
}

export function decodeShared(hash: string): SharedQuery | undefined {
  const m = /^#\/query\?(.*)$/.exec(hash);
  if (!m) return undefined;
  const p = new URLSearchParams(m[1]);
  const apl = p.get('apl');
  if (apl === null) return undefined;
  const start = p.get('start');
  const end = p.get('end');
  const range: TimeRange = start && end ? { start, end } : { last: p.get('last') ?? '1h' };
  return { apl, range };
}
