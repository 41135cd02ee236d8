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
