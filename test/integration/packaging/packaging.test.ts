import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../../../src/cli/node-flags.js';
import { tempDir } from '../../support/helpers.js';

const read = (file: string) => readFileSync(new URL(`../../../${file}`, import.meta.url), 'utf8');
const flags = DAEMON_NODE_FLAGS.join(' ');

describe('how the daemon is started', () => {
  it("starts node with the daemon's flags from npm start, systemd and the Docker image", () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain(`exec node ${flags} dist/src/cli/main.js agent`);
    expect(read('systemd/ferry.service')).toMatch(
      new RegExp(`^ExecStart=/usr/bin/node ${flags} /opt/ferry/dist/src/cli/main\\.js agent`, 'm'),
    );
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['node', ...DAEMON_NODE_FLAGS, 'dist/src/cli/main.js']);
  });

  it("gives node the daemon's environment from npm start, systemd and the Docker image", () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    for (const [k, v] of Object.entries(DAEMON_ENV)) {
      expect(pkg.scripts.start).toMatch(new RegExp(`&& (\\w+=\\S+ )*${k}=${v} (\\w+=\\S+ )*exec node `));
      expect(read('systemd/ferry.service')).toMatch(new RegExp(`^Environment=${k}=${v}$`, 'm'));
      expect(read('Dockerfile')).toMatch(new RegExp(`^\\s+${k}=${v} \\\\$`, 'm'));
    }
  });

  it('uses flags this node accepts', () => {
    expect(
      execFileSync(process.execPath, [...DAEMON_NODE_FLAGS, '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' }),
    ).toBe('ok');
  });
});

describe('packaging a sysadmin can trust', () => {
  it('npm pack makes a package of the program alone, its ferry bin included, built by prepack', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const files = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining(['dist/src/cli/main.js', 'config/ferry.yaml', 'systemd/ferry.service', 'package.json']),
    );
    // No tests, benchmarks, sources or source maps' TypeScript: what runs, and its configs.
    expect(files.filter((f) => /^(test|bench|src|dist\/test|dist\/bench)\//.test(f) || f.endsWith('.ts'))).toEqual([]);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
      bin: { ferry: string };
      scripts: { prepack: string };
    };
    expect(files).toContain(pkg.bin.ferry);
    expect(pkg.scripts.prepack).toBe('npm run build');
  });

  it('the unit file verifies, is hardened, raises the file limit and is ready only once the agent runs', () => {
    const unit = read('systemd/ferry.service');
    for (const line of [
      'Type=notify',
      'NotifyAccess=all',
      'LimitNOFILE=65536',
      'SystemCallFilter=@system-service',
      'SystemCallErrorNumber=EPERM',
      'ProtectProc=invisible',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
    ]) {
      expect(unit).toMatch(new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    }
    // systemd's own checker, where systemd is installed (Debian images, the CI machine).
    const verify = spawnSync(
      'systemd-analyze',
      ['verify', fileURLToPath(new URL('../../../systemd/ferry.service', import.meta.url))],
      { encoding: 'utf8' },
    );
    if (verify.error === undefined) expect(verify.stderr + verify.stdout).toBe('');
  });

  it('tells systemd it is ready through systemd-notify, after the sources and sinks are up', async () => {
    const dir = tempDir('ferry-notify-');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    // A stand-in for systemd-notify that records its arguments and the socket it was given.
    writeFileSync(join(bin, 'systemd-notify'), `#!/bin/sh\necho "$NOTIFY_SOCKET $*" >> ${join(dir, 'notified')}\n`, {
      mode: 0o755,
    });
    writeFileSync(
      join(dir, 'agent.yaml'),
      `service: { enabled: false }\nagent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }\nsources: { s: { type: file, include: ["${dir}/*.log"] } }\nsinks: { out: { type: axiom, inputs: [s], url: "http://127.0.0.1:9", token: t, dataset: d } }\n`,
    );
    const child = spawn(process.execPath, ['dist/src/cli/main.js', 'agent', join(dir, 'agent.yaml')], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, NOTIFY_SOCKET: '/run/systemd/notify' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const end = Date.now() + 20_000;
      // The shell makes the file before echo writes into it: the record is there once its line has ended.
      const notified = () => (existsSync(join(dir, 'notified')) ? readFileSync(join(dir, 'notified'), 'utf8') : '');
      while (!notified().endsWith('\n') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(notified()).toBe('/run/systemd/notify --ready --status=running: 1 source(s), 1 sink(s)\n');
      // The log line is written before the notification but reaches this pipe on its own schedule.
      while (!out.includes('"msg":"agent running"') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(out).toContain('"msg":"agent running"');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('the image: a .dockerignore, GeoIP data only when asked for, a fixed UID (its HEALTHCHECK: container.test.ts)', () => {
    const ignore = read('.dockerignore').split('\n');
    for (const entry of ['.git', 'node_modules', 'dist', 'data']) expect(ignore).toContain(entry);
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^ARG GEOIP=false$/m);
    expect(dockerfile).toContain('if [ "$GEOIP" != "true" ]; then rm -rf node_modules/geoip-lite; fi');
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
  });
});
