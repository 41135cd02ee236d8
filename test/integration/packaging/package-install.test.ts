/**
 * The package a host installs: `npm pack` holds the program alone (compiled code, configs, the unit, the
 * README and the shrinkwrap), and the README's install steps (unpack into /opt/ferry, `npm ci --omit=dev`)
 * give a `ferry` on the PATH that runs the store and the agent with the production dependencies only, at
 * exactly the versions tested here (the shrinkwrap).
 *
 * The install is offline, from npm's cache, which the checkout's own `npm ci` filled (as .ci/run does on a
 * clean clone): every dependency of the package is in the shrinkwrap with its address and integrity. Install scripts are skipped and zstd-napi's
 * native build copied from the checkout: compiling it again here would take most of a minute and prove only
 * that node-gyp works.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../support/helpers.js';

const run = (cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}) =>
  spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, ...opts, env: { ...process.env, ...opts.env } });

/**
 * The `ferry` found on the PATH through `bin` says its version, validates the host config of the installed
 * tree, and stores and queries events: DuckDB and zstd load from that tree.
 */
function ferryRuns(bin: string, dir: string, installed: string): void {
  const env = { PATH: `${bin}:${process.env.PATH}`, FERRY_LOG_FORMAT: 'json', AXIOM_TOKEN: 'xaat-test' };
  const version = run('ferry', ['--version'], { env, cwd: dir });
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  expect(version.stdout.trim()).toBe(`ferry ${pkg.version} (node ${process.version})`);
  const validate = run('ferry', ['validate', join(installed, 'config/host.yaml')], { env, cwd: dir });
  expect(validate.status, validate.stderr).toBe(0);

  // The store (DuckDB) and the pipe's zstd-compressed queue load from the installed tree.
  const data = join(dir, 'data');
  const lines = Array.from({ length: 25 }, (_, i) => JSON.stringify({ n: i, level: i % 5 ? 'info' : 'error' })).join(
    '\n',
  );
  const pipe = run('ferry', ['pipe', '--local', '--data-dir', data, '--dataset', 'app'], {
    env,
    cwd: dir,
    input: `${lines}\n`,
  });
  expect(pipe.status, pipe.stderr).toBe(0);
  const query = run(
    'ferry',
    ['query', '--local', '--data-dir', data, '--format', 'ndjson', "['app'] | where level == 'error' | count"],
    { env, cwd: dir },
  );
  expect(query.status, query.stderr).toBe(0);
  expect(JSON.parse(query.stdout.trim())).toEqual({ count: 5 });

  // The agent's zstd compressor (a prebuilt binary, an optional dependency per platform) is installed too.
  const codec = pathToFileURL(join(installed, 'dist/src/util/codec.js')).href;
  const offLoop = run(process.execPath, [
    '--input-type=module',
    '-e',
    `console.log((await import('${codec}')).zstdPoolProblem() ?? 'loaded')`,
  ]);
  expect(offLoop.stdout.trim(), offLoop.stderr).toBe('loaded');
}

describe('the installable package', () => {
  it('npm pack holds the program alone; unpacked and installed with npm ci --omit=dev, ferry on the PATH runs', () => {
    const dir = tempDir('ferry-package-');
    const packed = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir]);
    expect(packed.status, packed.stderr).toBe(0);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string; mode: number }[] }[];
    const files = info!.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining([
        'npm-shrinkwrap.json',
        'package.json',
        'README.md',
        'dist/src/cli/main.js',
        'config/ferry.yaml',
        'config/host.yaml',
        'systemd/ferry.service',
      ]),
    );
    expect(files.filter((f) => /^(test|bench|src|dist\/test|dist\/bench|docs)\//.test(f) || f.endsWith('.ts'))).toEqual(
      [],
    );
    // The command is executable as unpacked: the README links it into /usr/local/bin.
    expect(info!.files.find((f) => f.path === 'dist/src/cli/main.js')!.mode & 0o111).not.toBe(0);

    const opt = join(dir, 'opt', 'ferry');
    mkdirSync(opt, { recursive: true });
    expect(run('tar', ['xzf', join(dir, info!.filename), '-C', opt, '--strip-components=1']).status).toBe(0);
    const ci = run('npm', ['ci', '--omit=dev', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: opt,
    });
    expect(ci.status, ci.stderr).toBe(0);
    cpSync('node_modules/zstd-napi/build', join(opt, 'node_modules/zstd-napi/build'), { recursive: true });
    // Production dependencies only, at the shrinkwrap's versions (an override there pins what fastify takes).
    expect(existsSync(join(opt, 'node_modules/vitest'))).toBe(false);
    expect(existsSync(join(opt, 'node_modules/typescript'))).toBe(false);
    expect(existsSync(join(opt, 'node_modules/@duckdb/node-api'))).toBe(true);
    const lock = JSON.parse(readFileSync('npm-shrinkwrap.json', 'utf8')) as {
      packages: Record<string, { version: string }>;
    };
    const fastify = JSON.parse(readFileSync(join(opt, 'node_modules/fastify/package.json'), 'utf8')) as {
      version: string;
    };
    expect(fastify.version).toBe(lock.packages['node_modules/fastify']!.version);

    const bin = join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(join(opt, 'dist/src/cli/main.js'), join(bin, 'ferry'));
    ferryRuns(bin, dir, opt);
  }, 300_000);

  it('npm install -g of the package puts a ferry on the PATH that runs', () => {
    // A global install resolves the dependencies anew (npm reads no shrinkwrap or overrides of a package
    // installed globally): the registry's packuments are needed, the tarballs mostly come from the cache.
    const dir = tempDir('ferry-package-');
    const packed = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir]);
    expect(packed.status, packed.stderr).toBe(0);
    const [info] = JSON.parse(packed.stdout) as { filename: string }[];
    const prefix = join(dir, 'prefix');
    const install = run(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        join(dir, info!.filename),
      ],
      { cwd: dir },
    );
    expect(install.status, install.stderr).toBe(0);
    const installed = join(prefix, 'lib', 'node_modules', 'ferry');
    cpSync('node_modules/zstd-napi/build', join(installed, 'node_modules/zstd-napi/build'), { recursive: true });
    expect(existsSync(join(installed, 'node_modules/vitest'))).toBe(false);
    ferryRuns(join(prefix, 'bin'), dir, installed);
  }, 300_000);
});
