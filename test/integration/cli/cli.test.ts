import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN, startTestService, tempDir } from '../../support/helpers.js';

const CLI = 'dist/src/cli/main.js';
const ferry = (...args: string[]) =>
  spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, FERRY_LOG_LEVEL: 'info' },
  });

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function busyPort(): Promise<number> {
  const s = createServer();
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as { port: number }).port;
}

/** What a command wrote to stderr besides its JSON log lines: the one line that says why it stopped. */
const failure = (stderr: string) =>
  stderr
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('{'))
    .map((l) => `${l}\n`)
    .join('');

describe('the ferry command', () => {
  it("says its version, its commands, and each command's help; exits 2 on a usage error", () => {
    const pkg = JSON.parse(spawnSync('cat', ['package.json'], { encoding: 'utf8' }).stdout) as { version: string };
    expect(ferry('--version')).toMatchObject({ status: 0, stdout: `ferry ${pkg.version} (node ${process.version})\n` });
    const usage = ferry('--help');
    expect(usage.status).toBe(0);
    for (const c of ['agent', 'serve', 'pipe', 'query', 'validate']) expect(usage.stdout).toContain(`  ${c} `);
    for (const [c, text] of [
      ['agent', 'ferry agent --config FILE'],
      ['pipe', '--dataset, -d NAME'],
      ['serve', '--data-dir DIR'],
      ['query', '--format, -f FMT'],
      ['validate', 'ferry validate --config FILE'],
    ]) {
      const r = ferry(c!, '--help');
      expect(r.status, c).toBe(0);
      expect(r.stdout, c).toContain(text);
      expect(ferry('help', c!).stdout).toBe(r.stdout);
    }
    // A name every object inherits is no command: the general usage, not a crash.
    for (const name of ['constructor', '__proto__', 'toString'])
      expect(ferry('help', name), name).toMatchObject({ status: 0, stdout: expect.stringContaining('usage: ferry') });
    expect(ferry('users', 'constructor')).toMatchObject({
      status: 2,
      stderr: expect.stringContaining('unknown users command "constructor"'),
    });
    const pipeHelp = ferry('pipe', '-h').stdout;
    expect(pipeHelp).toContain('1 when some were not delivered or were refused');
    expect(ferry('agent', '--bogus')).toMatchObject({
      status: 2,
      stderr: 'ferry: agent: unknown option --bogus (try ferry agent --help)\n',
    });
    // A slip of the keyboard gets the flag it was meant to be, from the command's own flags.
    expect(ferry('pipe', '--dataset', 'd', '--lable', 'k=v')).toMatchObject({
      status: 2,
      stderr: 'ferry: pipe: unknown option --lable; did you mean --label? (try ferry pipe --help)\n',
    });
    expect(ferry('query', 'x', '--strat', 'now-1h')).toMatchObject({
      status: 2,
      stderr: 'ferry: query: unknown option --strat; did you mean --start? (try ferry query --help)\n',
    });
    expect(ferry('qurey')).toMatchObject({
      status: 2,
      stderr: 'ferry: unknown command "qurey"; did you mean query? (try ferry --help)\n',
    });
    // Nothing asked: the usage, on stderr, as a usage error.
    expect(ferry()).toMatchObject({ status: 2, stdout: '', stderr: expect.stringContaining('usage: ferry <command>') });
    expect(ferry('-v').stdout).toMatch(/^ferry \d+\.\d+\.\d+ \(node v\d+/);
    expect(ferry('frobnicate')).toMatchObject({
      status: 2,
      stderr: 'ferry: unknown command "frobnicate" (try ferry --help)\n',
    });
  });

  it('explains the config keys from the command line: ferry help config [WORD]', () => {
    const all = ferry('help', 'config');
    expect(all.status).toBe(0);
    expect(all.stdout).toContain('log.format  (default: none)\n    how log lines are written to stderr');
    const some = ferry('help', 'config', 'compression');
    expect(some.stdout).toMatch(/^sinks\.<name>\.compression \(axiom\)  \(default: zstd\)\n {4}zstd/);
    expect(some.stdout.split('\n').filter((l) => l && !l.startsWith('    '))).toEqual([
      'sinks.<name>.compression (axiom)  (default: zstd)',
      'sinks.<name>.compression (file)  (default: none)',
    ]);
    expect(ferry('help', 'config', 'nosuchkey')).toMatchObject({
      status: 1,
      stderr: 'ferry: no config key contains "nosuchkey" (ferry help config lists them all)\n',
    });
  });

  it('prints completion scripts that complete the commands and each command flags', () => {
    const complete = (words: string[]) =>
      spawnSync(
        'bash',
        [
          '-c',
          `source <(${process.execPath} ${CLI} completion bash); COMP_WORDS=(${words.join(' ')}); COMP_CWORD=${words.length - 1}; _ferry; echo "\${COMPREPLY[@]}"`,
        ],
        { encoding: 'utf8' },
      ).stdout;
    expect(complete(['ferry', 'tok'])).toBe('tokens\n');
    expect(complete(['ferry', 'pipe', '--da'])).toBe('--data-dir --dataset\n');
    expect(complete(['ferry', 'tokens', 'create', 'x', '--in'])).toBe('--ingest\n');
    expect(ferry('completion', 'fish').stdout).toContain(
      "complete -c ferry -n '__fish_seen_subcommand_from pipe' -l dataset\n",
    );
    expect(ferry('completion', 'zsh').stdout).toMatch(/^#compdef ferry\n/);
    expect(ferry('completion')).toMatchObject({
      status: 2,
      stderr: 'ferry: completion takes one shell: bash, zsh, fish (ferry completion bash)\n',
    });
  });

  it('takes the config path without --config, and refuses two', () => {
    expect(ferry('validate', 'config/ferry.yaml')).toMatchObject({
      status: 0,
      stdout: expect.stringContaining('config/ferry.yaml: valid'),
    });
    expect(ferry('validate', 'config/ferry.yaml', 'config/host.yaml')).toMatchObject({
      status: 2,
      stderr: 'ferry: validate takes one config file, got config/ferry.yaml, config/host.yaml\n',
    });
    expect(ferry('agent')).toMatchObject({ status: 2, stderr: expect.stringContaining('agent needs a config') });
  });

  it('fails to start with one line naming what to change, exit 1: an address in use, a locked store, a path that is not a directory', async () => {
    const dir = tempDir();
    const port = await busyPort();
    const inUse = ferry('serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'a'));
    expect(inUse.status).toBe(1);
    expect(failure(inUse.stderr)).toBe(
      `ferry: cannot listen on 127.0.0.1:${port}: it is already in use (another ferry running?); set service.listen (env FERRY_LISTEN) to another host:port\n`,
    );
    // The owner token was generated on the way: the log says where it is, never what it is.
    const ownerToken = readFileSync(join(dir, 'a', 'admin-token'), 'utf8').trim();
    expect(ownerToken).toMatch(/^xapt-/);
    expect(inUse.stderr).toContain(`generated the owner's personal access token into ${join(dir, 'a', 'admin-token')}`);
    expect(inUse.stdout + inUse.stderr).not.toContain(ownerToken);

    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `service: { enabled: false }\nagent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:${port}" } }\nsources: { s: { type: file, include: ["${dir}/*.log"] } }\nsinks: { out: { type: axiom, inputs: [s], url: "http://127.0.0.1:9", token: t, dataset: d } }\n`,
    );
    const apiInUse = ferry('agent', config);
    expect(apiInUse.status).toBe(1);
    expect(failure(apiInUse.stderr)).toBe(
      `ferry: cannot listen on 127.0.0.1:${port}: it is already in use (another ferry running?); set agent.api.listen (env FERRY_AGENT_LISTEN) to another host:port\n`,
    );

    const svc = await startTestService();
    try {
      const locked = ferry('serve', '--listen', '127.0.0.1:0', '--data-dir', svc.dataDir);
      expect(locked.status).toBe(1);
      expect(failure(locked.stderr)).toMatch(
        new RegExp(
          `^ferry: the store ${join(svc.dataDir, 'ferry.duckdb')} is in use by another process \\(.*PID ${process.pid}\\): stop it, or set service.data_dir \\(env FERRY_DATA_DIR\\) to another directory\\n$`,
        ),
      );
    } finally {
      await svc.stop();
    }

    writeFileSync(join(dir, 'plain-file'), '');
    const notDir = ferry('serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'plain-file', 'data'));
    expect(notDir.status).toBe(1);
    expect(failure(notDir.stderr)).toMatch(
      /^ferry: --data-dir: \S*plain-file\/data: a part of the path is not a directory \(mkdir\)\n$/,
    );
    expect(failure(notDir.stderr).split('\n')).toHaveLength(2);
  });

  it('keeps the store to its owner: data dir 0700, files 0600; refuses an owner token file others can read', async () => {
    const dir = join(tempDir(), 'data');
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', '127.0.0.1:0', '--data-dir', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const end = Date.now() + 30_000;
      while (!out.includes('event service listening') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      const url = (JSON.parse(out.split('\n').find((l) => l.includes('event service listening'))!) as { url: string })
        .url;
      const token = readFileSync(join(dir, 'admin-token'), 'utf8').trim();
      const r = await fetch(`${url}/v2/datasets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"name":"modes"}',
      });
      expect(r.status).toBe(200);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      for (const f of readdirSync(dir)) {
        const st = statSync(join(dir, f));
        expect(st.mode & 0o077, `${f} is ${(st.mode & 0o777).toString(8)}`).toBe(0);
      }
      expect(readdirSync(dir)).toEqual(expect.arrayContaining(['admin-token', 'ferry.duckdb']));
    } finally {
      child.kill('SIGKILL');
    }
    chmodSync(join(dir, 'admin-token'), 0o644);
    const refused = ferry('serve', '--listen', '127.0.0.1:0', '--data-dir', dir);
    expect(refused.status).toBe(1);
    expect(failure(refused.stderr)).toBe(
      `ferry: ${join(dir, 'admin-token')} is readable by others (mode 0644); it holds the owner's token: chmod 600 ${join(dir, 'admin-token')}\n`,
    );
  });

  it('SIGTERM interrupts a long query (answered 503) instead of waiting for it', async () => {
    const dir = join(tempDir(), 'data');
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', '127.0.0.1:0', '--data-dir', dir], {
      env: { ...process.env, FERRY_ADMIN_TOKEN: ADMIN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const end = Date.now() + 30_000;
      while (!out.includes('event service listening') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      const url = (JSON.parse(out.split('\n').find((l) => l.includes('event service listening'))!) as { url: string })
        .url;
      const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
      await fetch(`${url}/v2/datasets`, { method: 'POST', headers: admin, body: '{"name":"e"}' });
      const { token } = (await (
        await fetch(`${url}/v2/tokens`, {
          method: 'POST',
          headers: admin,
          body: JSON.stringify({ name: 't', datasetCapabilities: { e: { ingest: ['create'] } } }),
        })
      ).json()) as { token: string };
      for (let b = 0; b < 3; b++) {
        const body = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ k: 1, i: b * 20_000 + i })).join('\n');
        expect(
          (
            await fetch(`${url}/v1/ingest/e`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
              body,
            })
          ).status,
        ).toBe(200);
      }
      // 3.6 billion joined rows: tens of seconds of work.
      const query = fetch(`${url}/v1/query/_apl`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ apl: "['e'] | join kind=inner (['e'] | project k, j = i) on k | summarize sum(j)" }),
      });
      await new Promise((r) => setTimeout(r, 1500));
      const signalled = Date.now();
      child.kill('SIGTERM');
      const answer = await query;
      expect(answer.status).toBe(503);
      expect(await answer.json()).toEqual({
        code: 503,
        message: 'the service is shutting down; try again once it is back',
      });
      expect(await exited).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(8_000);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a second SIGTERM exits at once while the first waits for a request in flight', async () => {
    const dir = join(tempDir(), 'data');
    const child = spawn(process.execPath, [CLI, 'serve', '--listen', '127.0.0.1:0', '--data-dir', dir], {
      env: { ...process.env, FERRY_ADMIN_TOKEN: ADMIN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    let stillRunning = true;
    void exited.then(() => (stillRunning = false));
    try {
      const end = Date.now() + 30_000;
      while (!out.includes('event service listening') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      const url = new URL(
        (JSON.parse(out.split('\n').find((l) => l.includes('event service listening'))!) as { url: string }).url,
      );
      await fetch(`${url.origin}/v2/datasets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: '{"name":"e"}',
      });
      // An upload that has sent a tenth of its body: the first SIGTERM waits for it to finish.
      const { request } = await import('node:http');
      const upload = request({
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/v1/ingest/e',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/x-ndjson', 'content-length': '1000' },
      });
      upload.on('error', () => undefined);
      upload.write('{"a":1}\n'.repeat(12));
      await new Promise((r) => setTimeout(r, 300));
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1500));
      expect(stillRunning).toBe(true);
      child.kill('SIGTERM');
      expect(await exited).toBe(1);
      expect(out).toContain('second signal: exiting without waiting');
      upload.destroy();
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('logs as text for a person when log.format is text: time, level as a word, message, fields', async () => {
    const dir = tempDir();
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `log: { format: text }\nservice: { enabled: false }\nagent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }\nsources: { s: { type: file, include: ["${dir}/*.log"] } }\nsinks: { out: { type: axiom, inputs: [s], url: "http://127.0.0.1:9", token: t, dataset: d } }\n`,
    );
    const child = spawn(process.execPath, [CLI, 'agent', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const end = Date.now() + 30_000;
    while (!err.includes('agent running') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lines = err.split('\n').filter(Boolean);
    expect(lines.find((l) => l.includes('agent running'))).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  agent running .*api=http:\/\/127\.0\.0\.1:\d+/,
    );
    // No line is JSON, and each starts with its time and level.
    for (const l of lines) expect(l).toMatch(/^\S+Z (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) /);
  });

  it('npm start passes SIGTERM on to the agent, which stops cleanly; a Ctrl-C to the terminal drains once', async () => {
    const dir = tempDir();
    // The start script as it is, less its build step (the suite already built, and rebuilding here would
    // rewrite dist/ under the other tests), run by npm in a copy of the project's layout.
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } };
    expect(pkg.scripts.start).toMatch(/^npm run build && /);
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({
        name: 'ferry-start',
        private: true,
        scripts: { start: pkg.scripts.start.replace(/^npm run build && /, '') },
      }),
    );
    symlinkSync(resolve('dist'), join(project, 'dist'));
    symlinkSync(resolve('config'), join(project, 'config'));
    symlinkSync(resolve('node_modules'), join(project, 'node_modules'));
    const run = async (stop: (child: ChildProcess) => void) => {
      const child = spawn('npm', ['start', '--silent'], {
        cwd: project,
        env: {
          ...process.env,
          FERRY_LISTEN: '127.0.0.1:0',
          FERRY_AGENT_LISTEN: '127.0.0.1:0',
          FERRY_DATA_DIR: join(dir, 'data'),
          FERRY_AGENT_DATA_DIR: join(dir, 'agent'),
          FERRY_LOG_GLOB: join(dir, '*.log'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let out = '';
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      const end = Date.now() + 60_000;
      while (!out.includes('agent running') && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain('agent running');
      const agentPid = Number(/"pid":(\d+)/.exec(out)![1]);
      stop(child);
      expect(await exited).toBe(0);
      // The agent stopped too: it drained, said so, and its process is gone.
      const gone = Date.now() + 15_000;
      while (
        Date.now() < gone &&
        (() => {
          try {
            process.kill(agentPid, 0);
            return true;
          } catch {
            return false;
          }
        })()
      )
        await new Promise((r) => setTimeout(r, 100));
      expect(() => process.kill(agentPid, 0)).toThrow();
      expect(out).toContain('shutting down');
      return out;
    };
    await run((child) => child.kill('SIGTERM')); // npm itself, as a service manager would
    // Ctrl-C: the terminal signals the whole process group, and npm forwards its own copy to the agent:
    // one request to drain, not a second signal that ends it without waiting.
    const ctrlC = await run((child) => process.kill(-child.pid!, 'SIGINT'));
    expect(ctrlC).not.toContain('second signal');
    expect(ctrlC.match(/shutting down/g)).toHaveLength(1);
  });
});
