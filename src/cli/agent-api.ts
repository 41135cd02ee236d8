/**
 * Where the commands that watch a running agent (`ferry tap`, `ferry top`) reach its API: `--api URL`,
 * else FERRY_AGENT_API, else the config's `agent.api.listen` (a wildcard address read as loopback).
 */
import type { FerryConfig } from './config.js';
import { CommandError } from './service-client.js';

export function agentApiUrl(
  values: { api?: string; config?: string },
  loadConfig: (file: string | undefined) => FerryConfig,
): string {
  const given = values.api ?? process.env.FERRY_AGENT_API;
  if (given) {
    let url: URL | undefined;
    try {
      url = new URL(given);
    } catch {
      url = undefined;
    }
    // The agent's API is plain HTTP (on loopback): `localhost:8078` parses as a URL of scheme "localhost".
    if (!url || url.protocol !== 'http:' || !url.hostname)
      throw new CommandError(
        `--api "${given}" is not the agent's API URL (http://HOST:PORT, e.g. http://127.0.0.1:8078)`,
        2,
      );
    return url.origin;
  }
  const { host, port } = loadConfig(values.config).agent.api.listen;
  const h = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/** A request that could not reach the agent, said in one line with what to check. */
export function unreachable(url: string, err: unknown): CommandError {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const why = e.cause?.code ?? e.code ?? e.message;
  return new CommandError(
    `cannot reach the agent's API at ${url}: ${why} (is the agent running, with agent.api enabled? --api URL or -c FILE says where)`,
    1,
  );
}
