/**
 * A monitor's recent runs and alerts laid out on a time strip: each run a mark at its time, coloured by
 * its state, and each alert a band from its opening to its closing (or to the strip's end while open).
 * Pure: positions are fractions of the strip's width.
 */
import type { AlertChange, MonitorRun } from './api';

export interface RunMark {
  at: number;
  state: string;
  title: string;
}

export interface AlertBand {
  from: number;
  to: number;
  open: boolean;
}

export interface Timeline {
  runs: RunMark[];
  alerts: AlertBand[];
}

const clamp = (x: number) => Math.min(1, Math.max(0, x));

export function layoutTimeline(runs: MonitorRun[], history: AlertChange[], start: Date, end: Date): Timeline {
  const t0 = start.getTime();
  const width = Math.max(1, end.getTime() - t0);
  const pos = (iso: string) => clamp((Date.parse(iso) - t0) / width);
  const marks = runs
    .map((r) => ({
      at: pos(r._time),
      state: r.state,
      title: `${r._time} ${r.state}${r.value === null || r.value === undefined ? '' : ` value ${r.value}`}${r.error ? `: ${r.error}` : ''}`,
    }))
    .sort((a, b) => a.at - b.at);
  // History holds one change per group; a band is open while any group is.
  const changes = [...history].sort((a, b) => a.timestamp.localeCompare(b.timestamp));
  const alerts: AlertBand[] = [];
  let openAt: number | undefined;
  let depth = 0;
  for (const c of changes) {
    if (c.state === 'open') {
      if (depth === 0) openAt = pos(c.timestamp);
      depth++;
    } else if (depth > 0) {
      depth--;
      if (depth === 0) alerts.push({ from: openAt!, to: pos(c.timestamp), open: false });
    } else {
      // Closed within the strip after opening before it.
      alerts.push({ from: 0, to: pos(c.timestamp), open: false });
    }
  }
  if (depth > 0) alerts.push({ from: openAt!, to: 1, open: true });
  return { runs: marks, alerts };
}

/** A monitor's state as the list shows it: switched off, else its last run's, else not run yet. */
export function monitorState(
  m: { disabled: boolean; disabledUntil: string | null },
  last: MonitorRun | undefined,
  now: number,
): string {
  if (m.disabledUntil ? Date.parse(m.disabledUntil) > now : m.disabled) return 'disabled';
  return last?.state ?? 'not run yet';
}
