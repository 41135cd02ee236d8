import { createServer as createNetServer } from 'node:net';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { seededRandom } from '../../bench/torture.js';
import { buildConfig } from '../../src/cli/config.js';
import type { ServiceConfig } from '../../src/service/config.js';
import { startService, type RunningService, type ServiceOptions } from '../../src/service/service.js';

export const ADMIN = 'xapt-00000000-0000-4000-8000-000000000001';

import { tempDir } from './temp-dirs.js';

export { tempDir };

export interface TestService extends RunningService {
  dataDir: string;
  /** fetch with the admin token (or the given one) against the service. */
  call(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
    headers?: Record<string, string>,
  ): Promise<Response>;
  /** Creates an API token with the given capabilities and returns its secret. */
  apiToken(datasetCapabilities?: object, orgCapabilities?: object, extra?: object): Promise<string>;
  createDataset(name: string): Promise<void>;
  /** Creates a user with the base role and a personal access token for it. */
  userWithPat(role: string, name?: string): Promise<{ id: string; pat: string }>;
  stop(): Promise<void>;
}

let users = 0;

export async function startTestService(
  overrides: Partial<ServiceConfig> = {},
  dataDir = tempDir(),
  o: ServiceOptions = {},
): Promise<TestService> {
  const cfg = buildConfig({ service: { listen: '127.0.0.1:0', data_dir: dataDir, memory_limit: '256MB' } }, {});
  const svc = await startService(
    { ...cfg.service, ...overrides },
    pino({ level: 'silent' }),
    { FERRY_ADMIN_TOKEN: ADMIN },
    o,
  );
  const call: TestService['call'] = async (method, path, body, token = ADMIN, headers = {}) =>
    fetch(`${svc.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)
          ? { 'content-type': 'application/json' }
          : {}),
        ...headers,
      },
      body: (body === undefined
        ? undefined
        : typeof body === 'string' || body instanceof Uint8Array
          ? body
          : JSON.stringify(body)) as BodyInit | undefined,
    });
  return {
    ...svc,
    dataDir,
    call,
    async apiToken(
      datasetCapabilities = { '*': { ingest: ['create'], query: ['read'] } },
      orgCapabilities = {},
      extra = {},
    ) {
      const r = await call('POST', '/v2/tokens', { name: 'test', datasetCapabilities, orgCapabilities, ...extra });
      if (r.status !== 200) throw new Error(`token create failed: ${r.status} ${await r.text()}`);
      return ((await r.json()) as { token: string }).token;
    },
    async createDataset(name: string) {
      const r = await call('POST', '/v2/datasets', { name });
      if (r.status !== 200) throw new Error(`dataset create failed: ${r.status} ${await r.text()}`);
    },
    async userWithPat(role: string, name = `user${++users}`) {
      const u = await call('POST', '/v2/users', { name, email: `${name}.${++users}@example.com`, role });
      if (u.status !== 200) throw new Error(`user create failed: ${u.status} ${await u.text()}`);
      const { id } = (await u.json()) as { id: string };
      const t = await call('POST', `/v2/users/${id}/tokens`, {});
      if (t.status !== 200) throw new Error(`token issue failed: ${t.status} ${await t.text()}`);
      return { id, pat: ((await t.json()) as { token: string }).token };
    },
    async stop() {
      await svc.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs the CLI (compiled) with the service's URL and the owner's token; never rejects. */
export async function runFerry(
  url: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const r = await promisify(execFile)(process.execPath, ['dist/src/cli/main.js', ...args], {
      env: { ...process.env, FERRY_URL: url, FERRY_TOKEN: ADMIN, ...env },
    });
    return { ...r, code: 0 };
  } catch (e) {
    const err = e as { stdout: string; stderr: string; code: number };
    return { stdout: err.stdout, stderr: err.stderr, code: err.code };
  }
}

/**
 * A seeded test's seed (from the environment variable `env`, else drawn at random), its generator, and
 * the line a failure prints to replay it.
 */
export function testSeed(env: string, command: string): { seed: number; rnd: () => number; replay: string } {
  const seed = process.env[env] ? Number(process.env[env]) : Math.floor(Math.random() * 2 ** 31);
  return { seed, rnd: seededRandom(seed), replay: `seed ${seed} (replay: ${env}=${seed} ${command})` };
}

const MAIN = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** The exit: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The log lines so far. */
  log: string[];
}

/**
 * Starts the real `ferry serve` (compiled) as a child process with the owner token ADMIN, and resolves
 * with its URL once it listens. `config` is the YAML of its config file, if it needs one. The caller
 * kills it (SIGKILL in an afterAll, in case a test fails first).
 */
export async function serveProcess(
  dataDir: string,
  config?: string,
  env: Record<string, string> = {},
): Promise<ServeProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} missing: run npm run build (npm test does)`);
  const args = [MAIN, 'serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir];
  if (config !== undefined) {
    const file = join(tempDir('ferry-config-'), 'ferry.yaml');
    writeFileSync(file, config);
    args.push('--config', file);
  }
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env, FERRY_ADMIN_TOKEN: ADMIN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  let stderr = '';
  const log: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    // The log is on stderr, one JSON object a line (stderr is no terminal here).
    createInterface({ input: child.stderr! }).on('line', (line) => {
      stderr += `${line}\n`;
      log.push(line);
      try {
        const rec = JSON.parse(line) as { msg?: string; url?: string };
        if (rec.msg === 'event service listening' && rec.url) resolve(rec.url);
      } catch {
        /* not a log line */
      }
    });
    child.on('exit', (code) => reject(new Error(`ferry serve exited with ${code}: ${stderr}`)));
  });
  return { child, url, exited, log };
}

/** A clock the monitor scheduler takes, walked by the test (`clock.t = …`) rather than by time. */
export function walkingClock(t0: number): { t: number; now(): number } {
  return {
    t: t0,
    now() {
      return this.t;
    },
  };
}

type Capabilities = { datasetCapabilities?: object; orgCapabilities?: object };

/** The capabilities of several grants together, as a role or token body takes them. */
export function mergeCapabilities(grants: Capabilities[]): {
  datasetCapabilities: Record<string, unknown>;
  orgCapabilities: Record<string, unknown>;
} {
  const caps = { datasetCapabilities: {} as Record<string, unknown>, orgCapabilities: {} as Record<string, unknown> };
  for (const g of grants) {
    Object.assign(caps.datasetCapabilities, g.datasetCapabilities ?? {});
    Object.assign(caps.orgCapabilities, g.orgCapabilities ?? {});
  }
  return caps;
}

/** A loopback port nothing listens on now (for a server a child process opens on a port the test names). */
export async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

/** Waits until `cond` holds, polling; fails naming `what` after `ms`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
