/**
 * The monitor object (management.md §1.2): reading a create or update body into a stored monitor, with the
 * spec's limits, and the view a client gets back. Pure; the query itself is checked against the engine by
 * the caller (monitor-query.ts).
 */
import { randomBytes } from 'node:crypto';
import { canonicalKeys, FieldError, optionalTime } from '../bodies/fields.js';

export const MONITOR_TYPES = ['Threshold', 'MatchEvent', 'AnomalyDetection'] as const;
export type MonitorType = (typeof MONITOR_TYPES)[number];
export const OPERATORS = ['Below', 'BelowOrEqual', 'Above', 'AboveOrEqual', 'AboveOrBelow'] as const;
export type Operator = (typeof OPERATORS)[number];

export interface Monitor {
  id: string;
  name: string;
  type: MonitorType;
  description: string;
  aplQuery: string;
  operator: Operator | '';
  threshold: number;
  columnName: string;
  /** The MPL query of a monitor of metrics (then aplQuery is empty); absent in monitors stored before it. */
  mplQuery?: string;
  alertOnNoData: boolean;
  notifyByGroup: boolean;
  notifyEveryRun: boolean;
  resolvable: boolean;
  skipResolved: boolean;
  notifierIds: string[];
  intervalMinutes: number;
  rangeMinutes: number;
  secondDelay: number;
  triggerFromNRuns: number;
  triggerAfterNPositiveResults: number;
  compareDays: number;
  tolerance: number;
  disabled: boolean;
  disabledUntil: string | null;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
  /** The datasets the query reads, found when it was bound: who may see the monitor. Not shown. */
  datasets: string[];
  /**
   * Whose rights the runs carry: whoever last changed what the monitor reads or where it sends (its query,
   * its notifiers), checked as that principal when they did. Not shown; monitors stored before it run as
   * their creator.
   */
  runAs?: string;
}

/** The principal a monitor's runs carry the rights of. */
export function runsAs(m: Pick<Monitor, 'runAs' | 'createdBy'>): string {
  return m.runAs ?? m.createdBy;
}

/** What a body may set; everything else (id, createdAt, createdBy, updatedAt, unknown keys) is ignored. */
const KEYS = [
  'name',
  'type',
  'description',
  'aplQuery',
  'mplQuery',
  'operator',
  'threshold',
  'columnName',
  'alertOnNoData',
  'notifyByGroup',
  'notifyEveryRun',
  'resolvable',
  'skipResolved',
  'notifierIds',
  'intervalMinutes',
  'rangeMinutes',
  'secondDelay',
  'triggerFromNRuns',
  'triggerAfterNPositiveResults',
  'compareDays',
  'tolerance',
  'disabled',
  'disabledUntil',
] as const;

/** Axiom's OpenAPI limits (spec: Limits), and bounds that keep a window and its history queryable. */
export const MONITOR_LIMITS = {
  maxSecondDelay: 86_400,
  maxCompareDays: 7,
  maxTolerance: 100,
  /** 30 days, the longest range seen in use (management.md §1.2). */
  maxRangeMinutes: 43_200,
  maxIntervalMinutes: 43_200,
  maxTriggerRuns: 100,
};

export function newMonitorId(): string {
  return `mon_${randomBytes(12).toString('base64url').replace(/[-_]/g, '').slice(0, 14).padEnd(14, '0')}`;
}

/**
 * Reads a create or update body (PUT replaces the whole object, as the clients send it). Keys match
 * case-insensitively, as Go's decoder does; notifierIDs is the old spelling of notifierIds.
 */
export function readMonitorBody(
  body: unknown,
): Omit<Monitor, 'id' | 'createdAt' | 'createdBy' | 'updatedAt' | 'datasets' | 'runAs'> {
  const b = canonicalKeys(body, KEYS, { notifierids: 'notifierIds' }, 'monitor');
  const str = (k: string, def = ''): string => {
    const v = b[k];
    if (v === undefined || v === null) return def;
    if (typeof v !== 'string') throw new FieldError(k, 'must be a string');
    return v;
  };
  const bool = (k: string): boolean => {
    const v = b[k];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') throw new FieldError(k, 'must be true or false');
    return v;
  };
  const num = (k: string, def: number, o: { min?: number; max?: number; integer?: boolean } = {}): number => {
    const v = b[k];
    if (v === undefined || v === null) return def;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new FieldError(k, 'must be a number');
    if (o.integer && !Number.isInteger(v)) throw new FieldError(k, 'must be a whole number');
    if (o.min !== undefined && v < o.min) throw new FieldError(k, `must be at least ${o.min}`);
    if (o.max !== undefined && v > o.max) throw new FieldError(k, `must be at most ${o.max}`);
    return v;
  };

  const name = str('name').trim();
  if (!name) throw new FieldError('name', 'is required');
  const type = str('type');
  if (!type) throw new FieldError('type', `is required (one of ${MONITOR_TYPES.join(', ')})`);
  if (!(MONITOR_TYPES as readonly string[]).includes(type))
    throw new FieldError('type', `must be one of ${MONITOR_TYPES.join(', ')}, not "${type}"`);
  const apl = str('aplQuery');
  const mpl = str('mplQuery');
  if (apl && mpl) throw new FieldError('aplQuery', 'and mplQuery are mutually exclusive: give only one');
  if (!apl.trim() && !mpl.trim()) throw new FieldError('aplQuery', 'is required (one of aplQuery or mplQuery)');
  if (mpl && type === 'MatchEvent')
    throw new FieldError(
      'mplQuery',
      'does not fit a MatchEvent monitor: it notifies events, and metrics have none (use a Threshold or AnomalyDetection monitor)',
    );
  if (mpl && str('columnName'))
    throw new FieldError('columnName', "does not apply to an MPL query: a monitor compares its series' values");

  const operator = str('operator');
  if (operator && !(OPERATORS as readonly string[]).includes(operator))
    throw new FieldError('operator', `must be one of ${OPERATORS.join(', ')}, not "${operator}"`);
  if (type === 'Threshold') {
    if (!operator)
      throw new FieldError(
        'operator',
        'is required for a Threshold monitor (Below, BelowOrEqual, Above or AboveOrEqual)',
      );
    if (operator === 'AboveOrBelow')
      throw new FieldError(
        'operator',
        'AboveOrBelow (outside a band) applies to AnomalyDetection monitors only; a Threshold monitor compares one side: Below, BelowOrEqual, Above or AboveOrEqual',
      );
  }
  if (type === 'AnomalyDetection') {
    if (!operator)
      throw new FieldError('operator', 'is required for an AnomalyDetection monitor (Above, Below or AboveOrBelow)');
    if (operator === 'AboveOrEqual' || operator === 'BelowOrEqual')
      throw new FieldError(
        'operator',
        `${operator} does not apply to an AnomalyDetection monitor: a value is outside its band or not (Above, Below or AboveOrBelow)`,
      );
  }

  const notifiers = b.notifierIds;
  if (
    notifiers !== undefined &&
    notifiers !== null &&
    (!Array.isArray(notifiers) || notifiers.some((n) => typeof n !== 'string'))
  ) {
    throw new FieldError('notifierIds', 'must be an array of notifier ids');
  }
  const triggerFromNRuns = num('triggerFromNRuns', 1, { min: 0, max: MONITOR_LIMITS.maxTriggerRuns, integer: true });
  const triggerAfter = num('triggerAfterNPositiveResults', 0, {
    min: 0,
    max: MONITOR_LIMITS.maxTriggerRuns,
    integer: true,
  });
  if (triggerAfter > Math.max(1, triggerFromNRuns)) {
    throw new FieldError(
      'triggerAfterNPositiveResults',
      `(${triggerAfter}) cannot exceed triggerFromNRuns (${Math.max(1, triggerFromNRuns)}): it counts positive results among those runs`,
    );
  }
  return {
    name,
    type: type as MonitorType,
    description: str('description'),
    aplQuery: apl,
    mplQuery: mpl,
    operator: (type === 'MatchEvent' ? '' : operator) as Operator | '',
    threshold: num('threshold', 0),
    columnName: str('columnName'),
    alertOnNoData: bool('alertOnNoData'),
    notifyByGroup: bool('notifyByGroup'),
    notifyEveryRun: bool('notifyEveryRun'),
    resolvable: bool('resolvable'),
    skipResolved: bool('skipResolved'),
    notifierIds: [...new Set((notifiers as string[] | null | undefined) ?? [])],
    intervalMinutes: num('intervalMinutes', 1, { min: 1, max: MONITOR_LIMITS.maxIntervalMinutes, integer: true }),
    rangeMinutes: num('rangeMinutes', 1, { min: 1, max: MONITOR_LIMITS.maxRangeMinutes, integer: true }),
    secondDelay: num('secondDelay', 0, { min: 0, max: MONITOR_LIMITS.maxSecondDelay, integer: true }),
    triggerFromNRuns,
    triggerAfterNPositiveResults: triggerAfter,
    compareDays: num('compareDays', 0, { min: 0, max: MONITOR_LIMITS.maxCompareDays, integer: true }),
    tolerance: num('tolerance', 0, { min: 0, max: MONITOR_LIMITS.maxTolerance }),
    disabled: bool('disabled'),
    disabledUntil: optionalTime(b.disabledUntil, 'disabledUntil'),
  };
}

/** What a client sees: every field, notifierIDs too for clients of the old spelling. */
export function monitorView(m: Monitor): Record<string, unknown> {
  const { datasets: _datasets, runAs: _runAs, ...shown } = m;
  return { ...shown, notifierIDs: m.notifierIds, mplQuery: m.mplQuery ?? '' };
}

/**
 * Whether the monitor is switched off at `nowMs`: with disabledUntil, until that time (it then re-enables
 * itself, disabled or not); without, while `disabled`.
 */
export function isPaused(m: Pick<Monitor, 'disabled' | 'disabledUntil'>, nowMs: number): boolean {
  if (m.disabledUntil !== null) return Date.parse(m.disabledUntil) > nowMs;
  return m.disabled;
}
