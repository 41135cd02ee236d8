/**
 * The monitor form's draft and the body it sends: the monitor's other fields kept, the form's values on
 * top with numbers as numbers; and the field a service message names. Pure.
 */
import type { Monitor } from './api';

export type Draft = Record<string, string | boolean | string[]>;

export const TYPES = ['Threshold', 'MatchEvent', 'AnomalyDetection'];
export const OPERATORS = ['Above', 'AboveOrEqual', 'Below', 'BelowOrEqual', 'AboveOrBelow'];
const NUMBERS = [
  'threshold',
  'intervalMinutes',
  'rangeMinutes',
  'triggerFromNRuns',
  'triggerAfterNPositiveResults',
  'compareDays',
  'tolerance',
];
/** What the view shows but a body does not set (or sets under another spelling). */
const VIEW_ONLY = ['id', 'createdAt', 'createdBy', 'updatedAt', 'notifierIDs'];

export const EMPTY: Draft = {
  name: '',
  description: '',
  type: 'Threshold',
  aplQuery: '',
  mplQuery: '',
  operator: 'Above',
  threshold: '0',
  columnName: '',
  intervalMinutes: '5',
  rangeMinutes: '5',
  triggerFromNRuns: '1',
  triggerAfterNPositiveResults: '1',
  compareDays: '7',
  tolerance: '10',
  alertOnNoData: false,
  notifyByGroup: false,
  notifyEveryRun: false,
  skipResolved: false,
  disabled: false,
  notifierIds: [],
};

export function draftOf(m: Monitor): Draft {
  const d: Draft = { ...EMPTY };
  for (const k of Object.keys(EMPTY)) {
    const v = m[k];
    if (typeof v === 'boolean' || Array.isArray(v)) d[k] = v as boolean | string[];
    else if (v !== undefined && v !== null) d[k] = String(v);
  }
  return d;
}

/** The body to send: the monitor's other fields kept, the form's on top, numbers as numbers. */
export function monitorBody(base: Monitor | undefined, d: Draft): Record<string, unknown> {
  const body: Record<string, unknown> = { ...(base ?? {}) };
  for (const k of VIEW_ONLY) delete body[k];
  for (const [k, v] of Object.entries(d)) {
    if (NUMBERS.includes(k)) {
      const text = String(v).trim();
      if (text === '') delete body[k];
      else body[k] = Number(text);
    } else body[k] = v;
  }
  if (body.type === 'MatchEvent') body.operator = '';
  // A snooze (disabledUntil) rules over the switch while set: changing the switch ends it.
  if (base && base.disabledUntil && d.disabled !== base.disabled) body.disabledUntil = null;
  return body;
}

/** The field a service message names, when it starts with one of the form's. */
export function fieldOfMessage(message: string): string | undefined {
  const first = /^([A-Za-z]+)\b/.exec(message)?.[1];
  return first && first in EMPTY ? first : undefined;
}
