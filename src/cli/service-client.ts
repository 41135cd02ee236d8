/** How CLI commands reach a running service: its URL and token, and one JSON call. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FerryConfig } from './config.js';

export class ServiceCallError extends Error {}

/** A command's failure: exit 2 for a usage error, 1 when the service refuses or cannot be reached. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
  }
}

export interface ServiceTarget {
  url: string;
  token: string;
}

export function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** --url, FERRY_URL or the config's listen address; --token, FERRY_TOKEN or the owner token in the data dir. */
export function serviceTarget(values: { url?: string; token?: string }, cfg: FerryConfig): ServiceTarget {
  const url = (
    values.url ??
    process.env.FERRY_URL ??
    `http://${hostForUrl(cfg.service.listen.host)}:${cfg.service.listen.port}`
  ).replace(/\/+$/, '');
  let token = values.token ?? process.env.FERRY_TOKEN;
  if (!token) {
    const dataDir = process.env.FERRY_DATA_DIR ?? cfg.service.dataDir;
    try {
      token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    } catch {
      throw new ServiceCallError(
        `no token: pass --token, set FERRY_TOKEN, or run where ${join(dataDir, 'admin-token')} is readable`,
      );
    }
  }
  return { url, token };
}

/** One request; rejects with a one-line reason when the service cannot be reached or answers non-JSON. */
export async function callService<T = unknown>(
  t: ServiceTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; ok: boolean; json: T & { message?: string }; text: string }> {
  let res: Response;
  try {
    res = await fetch(`${t.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${t.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    const cause = (e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message;
    throw new ServiceCallError(`cannot reach ${t.url}: ${cause}`);
  }
  const text = await res.text();
  let json: T & { message?: string };
  try {
    json = (text ? JSON.parse(text) : {}) as T & { message?: string };
  } catch {
    throw new ServiceCallError(`${t.url} answered ${res.status} with a body that is not JSON`);
  }
  return { status: res.status, ok: res.ok, json, text };
}

interface StarredAnswer {
  name: string;
  who: string;
  query: { apl: string; startTime?: string; endTime?: string };
}

/** A starred query by name: the caller's own first, then the team's; a name shared by several is refused. */
export async function findStarred(
  t: ServiceTarget,
  name: string,
): Promise<{ apl: string; startTime?: string; endTime?: string }> {
  for (const who of ['', 'all']) {
    const path = `/v2/apl-starred-queries?limit=1000&qs=${encodeURIComponent(name)}${who ? `&who=${who}` : ''}`;
    const r = await callService<StarredAnswer[]>(t, 'GET', path);
    if (!r.ok) throw new ServiceCallError(`reading starred queries failed (${r.status}): ${r.json.message ?? r.text}`);
    const named = (r.json as StarredAnswer[]).filter((s) => s.name === name);
    if (named.length > 1)
      throw new ServiceCallError(
        `${named.length} starred queries are named "${name}" (saved by ${named.map((s) => s.who).join(', ')}); rename one`,
      );
    if (named.length === 1) return named[0]!.query;
  }
  throw new ServiceCallError(`no starred query named "${name}" that this token may read`);
}
