/**
 * The container image and the Kubernetes examples, without a container engine: the Dockerfile's own
 * ENTRYPOINT, CMD, ENV and HEALTHCHECK are read from it and run here as the image would run them (its paths
 * moved into a temp directory), and the manifests' YAML, the Ferry configs embedded in them and what they
 * wire together (volumes, config files, secrets, probes, users, grace periods) are checked, the configs
 * run for real against log files laid out as the kubelet lays them out.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { startReceiver, stopAgentsAndReceivers, trackChild } from '../../support/agent-process.js';
import { tempDir, until } from '../../support/helpers.js';

afterEach(stopAgentsAndReceivers);

/** The instructions of the Dockerfile's last stage that say how the image runs. */
interface Image {
  env: Record<string, string>;
  workdir: string;
  /** Where `RUN ln -s TARGET /usr/local/bin/ferry` points. */
  ferryLink: string;
  user: string;
  expose: number[];
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
}

function readImage(): Image {
  // Continuation lines joined, comments dropped; the last FROM starts the stage that runs.
  const lines = readFileSync('Dockerfile', 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'));
  const stage = lines.slice(lines.map((l) => l.startsWith('FROM ')).lastIndexOf(true));
  const image: Image = {
    env: {},
    workdir: '',
    ferryLink: '',
    user: '',
    expose: [],
    entrypoint: [],
    cmd: [],
    healthcheck: [],
  };
  for (const line of stage) {
    const [, op, rest = ''] = /^(\w+)\s+(.*)$/.exec(line.trim()) ?? [];
    if (op === 'ENV') for (const [, k, v] of rest.matchAll(/(\w+)=(\S+)/g)) image.env[k!] = v!;
    if (op === 'USER') image.user = rest.trim();
    if (op === 'WORKDIR') image.workdir = rest.trim();
    const link = /\bln -s (\S+) \/usr\/local\/bin\/ferry\b/.exec(rest);
    if (op === 'RUN' && link) image.ferryLink = link[1]!;
    if (op === 'EXPOSE') image.expose.push(...rest.trim().split(/\s+/).map(Number));
    if (op === 'ENTRYPOINT') image.entrypoint = JSON.parse(rest) as string[];
    if (op === 'CMD') image.cmd = JSON.parse(rest) as string[];
    if (op === 'HEALTHCHECK') image.healthcheck = JSON.parse(/CMD (\[.*\])$/.exec(rest)![1]!) as string[];
  }
  return image;
}

/** The image's environment with its paths under `root`, its listeners on loopback and free ports. */
function imageEnv(image: Image, root: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(image.env))
    env[k] = v.replace('/var/lib/ferry', join(root, 'var-lib-ferry')).replace('/var/log/app', join(root, 'logs'));
  return { ...env, FERRY_LISTEN: '127.0.0.1:0', FERRY_AGENT_LISTEN: '127.0.0.1:0', FERRY_LOG_FORMAT: 'json', ...extra };
}

/** Runs the image's ENTRYPOINT with `cmd` (WORKDIR /app is this checkout). */
function runImage(image: Image, cmd: string[], env: Record<string, string>): ChildProcess {
  const [node, ...args] = image.entrypoint;
  expect(node).toBe('node');
  const child = spawn(process.execPath, [...args, ...cmd], { env: { ...process.env, ...env }, stdio: 'ignore' });
  trackChild(child);
  return child;
}

/** Runs the HEALTHCHECK's command as Docker would, in the container's environment (not blocking the receiver). */
async function healthcheck(image: Image, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const [node, ...args] = image.healthcheck;
  expect(node).toBe('node');
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  return { code, out: out.trim() };
}

/** Polls the healthcheck until its line matches, then answers it and its exit code. */
async function healthUntil(
  image: Image,
  env: Record<string, string>,
  what: RegExp,
): Promise<{ code: number | null; out: string }> {
  let last = { code: null as number | null, out: '' };
  await until(`the healthcheck to say ${what}`, async () => {
    last = await healthcheck(image, env);
    return what.test(last.out);
  }).catch(() => {
    throw new Error(`healthcheck: exit ${last.code}: ${last.out}`);
  });
  return last;
}

describe('the container image', () => {
  it('runs as UID 10001, EXPOSEs what it serves, and its HEALTHCHECK works in every mode it runs', async () => {
    const image = readImage();
    expect(image.user).toBe('10001:10001');
    // The service's port (FERRY_LISTEN) and the agent API's (agent.api.listen in the configs).
    expect(image.expose).toEqual(expect.arrayContaining([Number(image.env.FERRY_LISTEN!.split(':')[1]), 8077, 8078]));
    expect(readFileSync('config/ferry.yaml', 'utf8')).toContain('${FERRY_AGENT_LISTEN:-127.0.0.1:8078}');
    expect(image.cmd).toEqual(['agent', '--config', 'config/ferry.yaml']);
    // `ferry` on the PATH (what docker exec and the Kubernetes probes run) is the entrypoint's script.
    expect(image.ferryLink).toBe(join(image.workdir, image.entrypoint.at(-1)!));
    expect(statSync('dist/src/cli/main.js').mode & 0o111).not.toBe(0);
    expect(readFileSync('dist/src/cli/main.js', 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);

    // Local mode (the default CMD): the agent and the service; the owner token where the README says.
    const local = tempDir('ferry-image-');
    mkdirSync(join(local, 'logs'));
    writeFileSync(join(local, 'logs', 'app.log'), '{"msg":"hello"}\n');
    const localEnv = imageEnv(image, local);
    const agent = runImage(image, image.cmd, localEnv);
    const localOk = await healthUntil(image, localEnv, /^ok: ferry agent \(pid \d+\)$/);
    expect(localOk).toEqual({ code: 0, out: `ok: ferry agent (pid ${agent.pid})` });
    expect(existsSync(join(localEnv.FERRY_DATA_DIR!, 'admin-token'))).toBe(true);
    // Gone (kill -9): unhealthy at once, saying so.
    agent.kill('SIGKILL');
    await new Promise((r) => agent.once('exit', r));
    const gone = await healthcheck(image, localEnv);
    expect(gone.code).toBe(1);
    expect(gone.out).toMatch(/^ferry: ferry agent \(pid \d+\) is not running/);

    // The service alone.
    const serveEnv = imageEnv(image, tempDir('ferry-image-'));
    const serve = runImage(image, ['serve'], serveEnv);
    expect(await healthUntil(image, serveEnv, /^ok: ferry serve/)).toEqual({
      code: 0,
      out: `ok: ferry serve (pid ${serve.pid})`,
    });
    serve.kill('SIGTERM');
    expect(await new Promise((r) => serve.once('exit', r))).toBe(0);
    // A clean stop removes the file: nothing runs there.
    expect((await healthcheck(image, serveEnv)).out).toMatch(/^ferry: no health file in /);

    // The sidecar with the agent's API off: healthy while it delivers, unhealthy when its token is refused.
    const receiver = await startReceiver();
    receiver.token = 'xaat-good';
    for (const [token, expected] of [
      ['xaat-good', /^ok: ferry agent/],
      ['xaat-bad', /^ferry: failing: ferry agent \(pid \d+\): sink axiom refused/],
    ] as const) {
      const dir = tempDir('ferry-image-');
      mkdirSync(join(dir, 'logs'));
      writeFileSync(join(dir, 'logs', 'app.log'), '{"msg":"from the app"}\n');
      const env = imageEnv(image, dir, { FERRY_AGENT_API: 'false', AXIOM_URL: receiver.url, AXIOM_TOKEN: token });
      const sidecar = runImage(image, ['agent', '--config', 'config/sidecar.yaml'], env);
      if (token === 'xaat-good') await until('the line delivered', () => receiver.events.length === 1);
      const last = await healthUntil(image, env, expected);
      expect(last.code).toBe(token === 'xaat-good' ? 0 : 1);
      sidecar.kill('SIGKILL');
    }
    expect(receiver.events.map((e) => e.msg)).toContain('from the app');
  });
});

// ---- Kubernetes ------------------------------------------------------------------------------------

type Obj = Record<string, any>;

function manifests(file: string): Obj[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  for (const d of docs) expect(d.errors, file).toEqual([]);
  return docs.map((d) => d.toJS() as Obj);
}

/** The containers of a workload, init containers (native sidecars) first. */
const containersOf = (pod: Obj): Obj[] => [...((pod.initContainers as Obj[]) ?? []), ...(pod.containers as Obj[])];

/**
 * What a workload wires together holds: every mount names a volume, every ConfigMap and config file the
 * Ferry container is given is in the file, its secrets are created by the header's commands, its data
 * directory is writable and its reads are mounted, its probes ask `ferry health` of that directory, and it
 * drains within the grace period. Answers the Ferry config, with its environment filled in as the pod would.
 */
function checkWorkload(file: string): { config: string; env: Record<string, string>; mounts: Obj[] } {
  const docs = manifests(file);
  for (const d of docs) {
    expect(d.apiVersion, file).toBeTruthy();
    expect(d.metadata?.name, file).toBeTruthy();
  }
  const workload = docs.find((d) => d.kind === 'DaemonSet' || d.kind === 'Deployment')!;
  expect(workload.apiVersion).toBe('apps/v1');
  const template = workload.spec.template as Obj;
  expect(template.metadata.labels).toMatchObject(workload.spec.selector.matchLabels as Obj);
  const pod = template.spec as Obj;
  const volumes = new Map((pod.volumes as Obj[]).map((v) => [v.name as string, v]));
  for (const c of containersOf(pod)) for (const m of c.volumeMounts as Obj[]) expect(volumes.has(m.name)).toBe(true);

  const ferry = containersOf(pod).find((c) => c.name === 'ferry')!;
  expect(ferry.image).toMatch(/ferry/);
  const configPath = ferry.args[ferry.args.indexOf('--config') + 1] as string;
  const mounts = ferry.volumeMounts as Obj[];
  const configMount = mounts.find((m) => m.mountPath === dirname(configPath))!;
  const mapName = volumes.get(configMount.name)!.configMap.name as string;
  const map = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === mapName)!;
  const config = map.data[configPath.split('/').pop()!] as string;
  expect(config).toBeTruthy();

  // The pod's environment: a secret's value and the downward API's, as stand-ins.
  const header = readFileSync(file, 'utf8');
  const env: Record<string, string> = {};
  for (const e of ferry.env as Obj[]) {
    if (e.valueFrom?.secretKeyRef) {
      const { name, key } = e.valueFrom.secretKeyRef as { name: string; key: string };
      expect(header).toMatch(new RegExp(`create secret generic ${name} --from-literal=${key}=`));
      env[e.name] = 'xaat-test';
    } else env[e.name] = e.value ?? `${String(e.name).toLowerCase()}-value`;
  }
  const dataDir = /data_dir: (\S+)/.exec(config)![1]!;
  const writable = (path: string) => mounts.some((m) => !m.readOnly && path.startsWith(`${m.mountPath}/`));
  expect(writable(dataDir)).toBe(true);
  for (const [, glob] of config.matchAll(/include: \["([^"]+)"\]/g)) {
    expect(mounts.some((m) => glob!.startsWith(`${m.mountPath}/`))).toBe(true);
  }
  expect(ferry.securityContext.readOnlyRootFilesystem).toBe(true);
  expect(mounts.some((m) => m.mountPath === '/tmp')).toBe(true);
  for (const probe of [ferry.livenessProbe, ferry.readinessProbe].filter((p: Obj | undefined) => p?.exec) as Obj[]) {
    expect(probe.exec.command.slice(0, 4)).toEqual(['ferry', 'health', '--config', configPath]);
  }
  expect(ferry.livenessProbe.exec.command).toContain('--live');
  const shutdown = Number(/shutdown_timeout: (\d+)s/.exec(config)![1]);
  expect(shutdown).toBeLessThan(pod.terminationGracePeriodSeconds as number);
  return { config, env, mounts };
}

/** Runs an embedded config, written into `root`, as the pod would with its environment. */
function runEmbedded(root: string, config: string, env: Record<string, string>): ChildProcess {
  writeFileSync(join(root, 'ferry.yaml'), config);
  const agent = spawn(process.execPath, ['dist/src/cli/main.js', 'agent', '--config', join(root, 'ferry.yaml')], {
    env: { ...process.env, ...env, FERRY_LOG_FORMAT: 'json' },
    stdio: 'ignore',
  });
  trackChild(agent);
  return agent;
}

/** The config with its container paths moved under `root`. */
const relocate = (config: string, paths: string[], root: string) =>
  paths.reduce((c, p) => c.replaceAll(p, join(root, p.replace(/\//g, '_'))), config);

describe('the Kubernetes examples', () => {
  it('a DaemonSet reads /var/log/pods as root without capabilities, and names each line’s namespace, pod and container', async () => {
    const { config, env } = checkWorkload('config/kubernetes/daemonset.yaml');
    const ds = manifests('config/kubernetes/daemonset.yaml').find((d) => d.kind === 'DaemonSet')!;
    const ferry = ds.spec.template.spec.containers[0] as Obj;
    // Root reads its own 0640 files without a capability: none is added back.
    expect(ferry.securityContext.capabilities).toEqual({ drop: ['ALL'] });
    expect(ferry.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(ds.spec.template.spec.volumes.find((v: Obj) => v.name === 'state').hostPath.path).toBe(
      '/var/lib/ferry-node',
    );

    // The kubelet's layout: /var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log, CRI lines.
    const root = tempDir('ferry-k8s-');
    const receiver = await startReceiver();
    const relocated = relocate(config, ['/var/log/pods', '/var/lib/ferry'], root)
      .replace('${AXIOM_URL:-https://api.axiom.co}', receiver.url)
      .replace('0.0.0.0:8078', '127.0.0.1:0');
    const pods = join(root, '_var_log_pods');
    const web = join(pods, 'shop_web-7d9f8_0b1c-uid', 'nginx');
    const job = join(pods, 'batch_report-x2_9f3e-uid', 'worker');
    mkdirSync(web, { recursive: true });
    mkdirSync(job, { recursive: true });
    const t = '2026-11-27T02:00:00.123456789Z';
    writeFileSync(join(web, '0.log'), `${t} stdout F {"id":"a","msg":"GET /"}\n${t} stderr P {"id":"b",\n`);
    appendFileSync(join(web, '0.log'), `${t} stderr F "msg":"joined"}\n`);
    writeFileSync(join(job, '1.log'), `${t} stdout F plain text line\n`);
    // Its own pod's lines are left out.
    const own = join(pods, 'ferry_ferry-x7k2p_5e6f-uid', 'ferry');
    mkdirSync(own, { recursive: true });
    writeFileSync(join(own, '0.log'), `${t} stderr F {"msg":"summary"}\n`);
    const agent = runEmbedded(root, relocated, env);
    await until('3 events', () => receiver.events.length === 3);
    // The CRI parser gives the line as `message` (JSON lines stay text: parse_json(message) in APL).
    const byMessage = (m: string) => receiver.events.find((e) => e.message === m)!;
    expect(byMessage('{"id":"a","msg":"GET /"}')).toMatchObject({
      stream: 'stdout',
      _time: t,
      node: 'node_name-value',
      kubernetes: { namespace: 'shop', pod: 'web-7d9f8', container: 'nginx' },
    });
    expect(byMessage('{"id":"b","msg":"joined"}')).toMatchObject({
      stream: 'stderr',
      kubernetes: { container: 'nginx' },
    });
    expect(byMessage('plain text line')).toMatchObject({
      kubernetes: { namespace: 'batch', pod: 'report-x2', container: 'worker' },
    });
    expect(receiver.events[0]).not.toHaveProperty('file');
    const health = spawnSync(
      process.execPath,
      ['dist/src/cli/main.js', 'health', '--config', join(root, 'ferry.yaml')],
      { env: { ...process.env, ...env }, encoding: 'utf8' },
    );
    expect(health.stdout).toMatch(/^ok: ferry agent/);
    // The two pods' files, not the agent's own.
    const json = spawnSync(
      process.execPath,
      ['dist/src/cli/main.js', 'health', '--json', '--config', join(root, 'ferry.yaml')],
      { env: { ...process.env, ...env }, encoding: 'utf8' },
    );
    expect((JSON.parse(json.stdout) as { health: { sources: { files: number }[] } }).health.sources[0]!.files).toBe(2);
    expect(receiver.events).toHaveLength(3);
    agent.kill('SIGTERM');
  });

  it('a sidecar shares the log volume as UID 10001 through the pod’s fsGroup, its API off, probed by ferry health', async () => {
    const { config, env } = checkWorkload('config/kubernetes/sidecar.yaml');
    const deployment = manifests('config/kubernetes/sidecar.yaml').find((d) => d.kind === 'Deployment')!;
    const pod = deployment.spec.template.spec as Obj;
    const ferry = pod.initContainers[0] as Obj;
    expect(ferry.restartPolicy).toBe('Always');
    expect(ferry.securityContext.runAsUser).toBe(Number(readImage().user.split(':')[0]));
    expect(pod.securityContext.fsGroup).toBe(ferry.securityContext.runAsGroup);
    // A sidecar that is not ready would take the application out of its Service.
    expect(ferry.readinessProbe).toBeUndefined();
    const app = pod.containers.find((c: Obj) => c.name === 'app') as Obj;
    const shared = (app.volumeMounts as Obj[]).find((m) => m.mountPath === '/var/log/app')!;
    expect((ferry.volumeMounts as Obj[]).find((m) => m.mountPath === '/var/log/app')).toMatchObject({
      name: shared.name,
      readOnly: true,
    });

    const root = tempDir('ferry-k8s-');
    const receiver = await startReceiver();
    const relocated = relocate(config, ['/var/log/app', '/var/lib/ferry'], root).replace(
      '${AXIOM_URL:-https://api.axiom.co}',
      receiver.url,
    );
    mkdirSync(join(root, '_var_log_app'));
    writeFileSync(join(root, '_var_log_app', 'app.log'), '{"level":"info","msg":"tick","n":1}\n');
    const agent = runEmbedded(root, relocated, env);
    await until('the event', () => receiver.events.length === 1);
    expect(receiver.events[0]).toMatchObject({ msg: 'tick', pod: 'pod_name-value', namespace: 'pod_namespace-value' });
    const probe = ferry.livenessProbe.exec.command as string[];
    const r = spawnSync(
      process.execPath,
      ['dist/src/cli/main.js', ...probe.slice(1).map((a) => (a.endsWith('ferry.yaml') ? join(root, 'ferry.yaml') : a))],
      { env: { ...process.env, ...env }, encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ok: ferry agent/);
    agent.kill('SIGTERM');
  });
});
