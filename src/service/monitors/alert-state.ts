/**
 * The alert lifecycle of Threshold and AnomalyDetection monitors (management.md §1.4), per group. Pure:
 * given the stored state and one run's observations, it returns the next state, the notifications to send
 * and the state changes for the history.
 *
 * - N-of-M: a group opens when at least N of its last M runs were positive (M = triggerFromNRuns, at
 *   least 1; N = triggerAfterNPositiveResults, 0 meaning all M).
 * - An open group closes on its first negative run, or when its series stops returning data (value 0).
 * - notifyEveryRun sends Open again on each positive run while open; skipResolved sends no Closed.
 * - Each group sends at most one notification per run.
 */
import type { Monitor } from './monitor.js';
import type { Observation } from './evaluate.js';

export interface GroupState {
  open: boolean;
  /** When the group last opened (ISO), while open. */
  since?: string;
  /** The last M runs, oldest first: positive or not. */
  recent: boolean[];
  groupKeys: string[] | null;
  groupValues: unknown[] | null;
}

/** Groups one monitor keeps: beyond this, new groups are not tracked (and the run says so). */
export const MAX_GROUPS = 1000;

export interface AlertEvent {
  action: 'Open' | 'Closed';
  key: string;
  observation: Observation;
}

export interface StepResult {
  groups: Record<string, GroupState>;
  /** What to notify. */
  notify: AlertEvent[];
  /** State changes, for the history (sent or not). */
  changes: AlertEvent[];
  /** Groups beyond MAX_GROUPS that were not tracked. */
  dropped: number;
}

export function stepAlerts(
  m: Monitor,
  groups: Record<string, GroupState>,
  observations: Observation[],
  nowIso: string,
): StepResult {
  const M = Math.max(1, m.triggerFromNRuns);
  const N = m.triggerAfterNPositiveResults > 0 ? Math.min(m.triggerAfterNPositiveResults, M) : M;
  const next: Record<string, GroupState> = {};
  const notify: AlertEvent[] = [];
  const changes: AlertEvent[] = [];
  let dropped = 0;
  const seen = new Set<string>();
  let tracked = 0;
  for (const o of observations) {
    seen.add(o.key);
    const prev = groups[o.key];
    if (!prev && tracked >= MAX_GROUPS) {
      dropped++;
      continue;
    }
    tracked++;
    const recent = [...(prev?.recent ?? []), o.positive].slice(-M);
    const g: GroupState = {
      open: prev?.open ?? false,
      since: prev?.since,
      recent,
      groupKeys: o.groupKeys,
      groupValues: o.groupValues,
    };
    if (!g.open && recent.filter(Boolean).length >= N && o.positive) {
      g.open = true;
      g.since = nowIso;
      const e: AlertEvent = { action: 'Open', key: o.key, observation: o };
      changes.push(e);
      notify.push(e);
    } else if (g.open && o.positive) {
      if (m.notifyEveryRun) notify.push({ action: 'Open', key: o.key, observation: o });
    } else if (g.open && !o.positive) {
      g.open = false;
      g.since = undefined;
      const e: AlertEvent = { action: 'Closed', key: o.key, observation: o };
      changes.push(e);
      if (!m.skipResolved) notify.push(e);
    }
    next[o.key] = g;
  }
  // Groups that returned nothing this run: an open one resolves with value 0; the rest age out.
  for (const [key, prev] of Object.entries(groups)) {
    if (seen.has(key)) continue;
    const recent = [...prev.recent, false].slice(-M);
    if (prev.open) {
      const o: Observation = {
        key,
        groupKeys: prev.groupKeys,
        groupValues: prev.groupValues,
        value: 0,
        positive: false,
        noData: true,
        sentence: 'The series stopped returning data',
      };
      const e: AlertEvent = { action: 'Closed', key, observation: o };
      changes.push(e);
      if (!m.skipResolved) notify.push(e);
    }
    if (recent.some(Boolean)) next[key] = { ...prev, open: false, since: undefined, recent };
  }
  return { groups: next, notify, changes, dropped };
}
