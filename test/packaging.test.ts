import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../src/cli/node-flags.js';

const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');
const flags = DAEMON_NODE_FLAGS.join(' ');

describe('how the daemon is started', () => {
  it('starts node with the daemon\'s flags from npm start, systemd and the Docker image', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain(`exec node ${flags} dist/src/cli/main.js agent`);
    expect(read('systemd/ferry.service')).toMatch(new RegExp(`^ExecStart=/usr/bin/node ${flags} /opt/ferry/dist/src/cli/main\\.js agent`, 'm'));
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['node', ...DAEMON_NODE_FLAGS, 'dist/src/cli/main.js']);
  });

  it('uses flags this node accepts', () => {
    expect(execFileSync(process.execPath, [...DAEMON_NODE_FLAGS, '-e', 'process.stdout.write("ok")'], { encoding: 'utf8' })).toBe('ok');
  });
});
