/** How the console writes counts, sizes, time spans and retention: pure, so the unit tests pin them. */

export const formatCount = (n: number) => n.toLocaleString('en');

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** Bytes in binary units with three significant digits: 0 B, 999 B, 1.00 KiB, 12.3 MiB. */
export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${UNITS[u]}`;
}

/** A duration in its two largest units that are not zero: 45s, 3m 20s, 2h 5m, 1d 59m. */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  const parts: [number, string][] = [
    [Math.floor(s / 86_400), 'd'],
    [Math.floor(s / 3600) % 24, 'h'],
    [Math.floor(s / 60) % 60, 'm'],
    [s % 60, 's'],
  ];
  const shown = parts.filter(([v]) => v > 0).slice(0, 2);
  return shown.length === 0 ? '0s' : shown.map(([v, u]) => `${v}${u}`).join(' ');
}

/** The span from the oldest to the newest event; empty for a dataset without events. */
export function formatSpan(minTime: string | null, maxTime: string | null): string {
  if (!minTime || !maxTime) return '';
  return `${minTime.slice(0, 19).replace('T', ' ')} → ${maxTime.slice(0, 19).replace('T', ' ')} (${formatDuration(Date.parse(maxTime) - Date.parse(minTime))})`;
}

/** A dataset's own retention, or the service's default when it keeps none of its own. */
export function formatRetention(d: { retentionDays: number; useRetentionPeriod: boolean }): string {
  if (!d.useRetentionPeriod) return 'service default';
  return d.retentionDays === 0 ? 'forever' : `${d.retentionDays} days`;
}
