/**
 * The service's API, as the pages call it: the same endpoints and bodies as any client, with the token as
 * a Bearer header. An error answer ({code, message}) becomes an ApiError carrying both.
 */
import { forgetToken, storedToken } from './session';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Called when the token is refused (401): the app signs out. */
let onUnauthorized: () => void = () => undefined;
export function whenUnauthorized(f: () => void): void {
  onUnauthorized = f;
}

export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  o: { signal?: AbortSignal; token?: string } = {},
): Promise<T> {
  const token = o.token ?? storedToken();
  const res = await fetch(path, {
    method,
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: o.signal,
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const message =
      (parsed as { message?: string } | undefined)?.message ?? `${res.status} ${res.statusText || 'error'}`;
    if (res.status === 401 && !o.token) {
      forgetToken();
      onUnauthorized();
    }
    throw new ApiError(res.status, message);
  }
  return parsed as T;
}

export interface Field {
  name: string;
  type: string;
}

export interface TabularTable {
  name: string;
  fields: Field[];
  groups: { name: string }[];
  order?: { field: string; desc: boolean }[];
  columns: unknown[][];
}

export interface TabularResult {
  status: {
    elapsedTime: number;
    rowsMatched: number;
    rowsExamined: number;
    isPartial?: boolean;
    minCursor?: string;
    maxCursor?: string;
  };
  tables: TabularTable[];
  datasetNames: string[];
}

export interface Dataset {
  name: string;
  description?: string;
}

/** `page`: at most `limit` rows, after `cursor` (the cursor of the last row of the page before). */
export function runQuery(
  apl: string,
  range: { startTime: string; endTime: string },
  signal: AbortSignal,
  page: { limit: number; cursor?: string },
): Promise<TabularResult> {
  return api<TabularResult>('POST', '/v1/datasets/_apl?format=tabular', { apl, ...range, ...page }, { signal });
}

export const listDatasets = () => api<Dataset[]>('GET', '/v2/datasets');

export const datasetFields = (dataset: string) =>
  api<{ name: string; type: string }[]>('GET', `/v2/datasets/${encodeURIComponent(dataset)}/fields`);

export interface DatasetSummary {
  name: string;
  description: string;
  kind: string;
  created: string;
  retentionDays: number;
  useRetentionPeriod: boolean;
}

export interface FieldInfo {
  name: string;
  type: string;
  description: string;
  unit: string;
  hidden: boolean;
}

/** GET /v1/datasets/{id}/info. */
export interface DatasetInfo {
  name: string;
  numEvents: number;
  numFields: number;
  inputBytes: number;
  compressedBytes: number;
  minTime: string | null;
  maxTime: string | null;
  created: string;
  fields: FieldInfo[];
}

export const listDatasetSummaries = () => api<DatasetSummary[]>('GET', '/v2/datasets');

export const datasetInfo = (dataset: string) =>
  api<DatasetInfo>('GET', `/v1/datasets/${encodeURIComponent(dataset)}/info`);

/** A monitor as the API shows it; the form edits these and PUTs the whole object back. */
export interface Monitor {
  id: string;
  name: string;
  type: 'Threshold' | 'MatchEvent' | 'AnomalyDetection';
  description: string;
  aplQuery: string;
  /** A monitor of metrics: its MPL query (aplQuery is then empty). */
  mplQuery?: string;
  operator: string;
  threshold: number;
  columnName: string;
  alertOnNoData: boolean;
  notifyByGroup: boolean;
  notifyEveryRun: boolean;
  skipResolved: boolean;
  notifierIds: string[];
  intervalMinutes: number;
  rangeMinutes: number;
  triggerFromNRuns: number;
  triggerAfterNPositiveResults: number;
  compareDays: number;
  tolerance: number;
  disabled: boolean;
  disabledUntil: string | null;
  [other: string]: unknown;
}

/** One run, as /v2/monitors/{id}/runs records it. */
export interface MonitorRun {
  _time: string;
  state: string;
  value: number | null;
  durationMs: number;
  rowsMatched: number;
  opened: number;
  closed: number;
  notified: number;
  notificationsFailed: number;
  error?: string | null;
}

/** An alert's opening or closing (/v2/monitors/{id}/history). */
export interface AlertChange {
  state: 'open' | 'closed';
  timestamp: string;
}

export const listMonitors = () => api<Monitor[]>('GET', '/v2/monitors');

const within = (start: Date, end: Date) =>
  `startTime=${encodeURIComponent(start.toISOString())}&endTime=${encodeURIComponent(end.toISOString())}`;

export const monitorRuns = (id: string, start: Date, end: Date) =>
  api<MonitorRun[]>('GET', `/v2/monitors/${encodeURIComponent(id)}/runs?${within(start, end)}&limit=1000`);

export const monitorHistory = (id: string, start: Date, end: Date) =>
  api<AlertChange[]>('GET', `/v2/monitors/${encodeURIComponent(id)}/history?${within(start, end)}`);

export const listNotifiers = () => api<{ id: string; name: string }[]>('GET', '/v2/notifiers');
