/** How CLI commands reach a running service: its URL and token, and one JSON call. */
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { join } from 'node:path';
import { type FerryConfig, parseListen } from './config.js';

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

/**
 * Where the service is, found as it was started: --url, FERRY_URL, FERRY_LISTEN (which beats the config's
 * address when the service starts), the config's service.listen; the token: --token, FERRY_TOKEN, or the
 * owner token in the data dir.
 */
export function serviceTarget(values: { url?: string; token?: string }, cfg: FerryConfig): ServiceTarget {
  const listen = process.env.FERRY_LISTEN ? parseListen(process.env.FERRY_LISTEN, 'FERRY_LISTEN') : cfg.service.listen;
  const url = (
    values.url ??
    (process.env.FERRY_URL || undefined) ??
    `http://${hostForUrl(listen.host)}:${listen.port}`
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

/** The flags every command that calls the service takes. */
export const SERVICE_FLAGS = {
  url: { type: 'string' },
  token: { type: 'string' },
  config: { type: 'string', short: 'c' },
} as const;

/** A command's arguments, a refused one a usage error (exit 2). */
export function commandArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (e) {
    throw new CommandError((e as Error).message, 2);
  }
}

/** `ferry <command> <sub> ARGS…`: the subcommand (default list) and its arguments, checked against its arity. */
export function subcommand(command: string, positionals: string[], arity: Record<string, number>) {
  const [sub = 'list', ...args] = positionals;
  if (arity[sub] === undefined)
    throw new CommandError(`unknown ${command} command "${sub}" (try ferry ${command} --help)`, 2);
  if (args.length !== arity[sub])
    throw new CommandError(
      `${command} ${sub} takes ${arity[sub]} argument(s), got ${args.length} (try ferry ${command} --help)`,
      2,
    );
  return { sub, args };
}

/** The service to call, from the flags and the config they name; what is wrong there is a usage error. */
export function targetFor(
  values: { url?: string; token?: string; config?: string },
  loadConfig: (file?: string) => FerryConfig,
): ServiceTarget {
  try {
    return serviceTarget(values, loadConfig(values.config));
  } catch (e) {
    throw new CommandError((e as Error).message, 2);
  }
}

/** One call that must succeed: a refusal becomes a one-line reason naming what was being done (exit 1). */
export async function requestService<T = unknown>(
  t: ServiceTarget,
  what: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const r = await callService<T>(t, method, path, body);
  if (!r.ok) throw new CommandError(`${what} failed (${r.status}): ${r.json.message ?? r.text}`, 1);
  return r.json;
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
