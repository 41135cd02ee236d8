/** The query's time range: relative ("last 1h", resolved when the query runs) or absolute (a zoom, typed dates). */
export type TimeRange = { last: string } | { start: string; end: string };

export const RELATIVE_RANGES: { last: string; label: string; ms: number }[] = [
  { last: '15m', label: 'Last 15 minutes', ms: 15 * 60_000 },
  { last: '1h', label: 'Last hour', ms: 3_600_000 },
  { last: '6h', label: 'Last 6 hours', ms: 6 * 3_600_000 },
  { last: '24h', label: 'Last 24 hours', ms: 24 * 3_600_000 },
  { last: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
  { last: '30d', label: 'Last 30 days', ms: 30 * 86_400_000 },
  { last: '90d', label: 'Last 90 days', ms: 90 * 86_400_000 },
];

export function resolveRange(r: TimeRange, now = Date.now()): { startTime: string; endTime: string } {
  if ('start' in r) return { startTime: r.start, endTime: r.end };
  const rel = RELATIVE_RANGES.find((x) => x.last === r.last) ?? RELATIVE_RANGES[1]!;
  return { startTime: new Date(now - rel.ms).toISOString(), endTime: new Date(now).toISOString() };
}

export function describeRange(r: TimeRange): string {
  if ('start' in r) return `${r.start} – ${r.end}`;
  return RELATIVE_RANGES.find((x) => x.last === r.last)?.label ?? r.last;
}
