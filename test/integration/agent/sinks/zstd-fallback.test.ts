/**
 * zstd where its binary for libuv's thread pool does not load (a platform it is not built for, an install
 * without optional dependencies): an agent's zstd sink says so once as it starts, with the cause, and still
 * delivers every event, compressed on the event loop. Where it loads, nothing is said.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { tempDir, until } from '../../../support/helpers.js';

afterEach(stopAgentsAndReceivers);

const WARNING =
  "zstd compresses on the event loop, slower: its binary for libuv's thread pool (@toondepauw/node-zstd) did not load";

function agentConfig(dir: string, name: string, url: string, log: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `agent: { data_dir: ${join(dir, `state-${name}`)}, api: { enabled: false } }
service: { enabled: false }
sources: { file: { type: file, include: ["${log}"], start_at: beginning } }
sinks:
  out: { type: axiom, inputs: [file], url: "${url}", token: xaat-test, dataset: ${name}, batch: { timeout: 50ms } }
`,
  );
  return file;
}

describe('zstd without its pool binary', () => {
  it('is said once as the sink starts, with the cause, and every event still arrives', async () => {
    const dir = tempDir('ferry-zstd-fallback-');
    const log = join(dir, 'app.log');
    writeFileSync(log, Array.from({ length: 500 }, (_, i) => `${JSON.stringify({ n: i, level: 'info' })}\n`).join(''));
    // The package's loader throws as it would on a platform with no prebuilt binary.
    const preload = join(dir, 'no-binary.cjs');
    writeFileSync(
      preload,
      `const Module = require('node:module');
const load = Module._load;
Module._load = function (request, ...rest) {
  if (request === '@toondepauw/node-zstd') throw new Error('Cannot find native binding (test)');
  return load.call(this, request, ...rest);
};
`,
    );
    const receiver = await startReceiver();
    const without = startAgent(agentConfig(dir, 'without', receiver.url, log), {
      NODE_OPTIONS: `--require ${preload}`,
    });
    const withBinary = startAgent(agentConfig(dir, 'with', receiver.url, log));
    const warned = await without.waitLog(WARNING);
    expect(warned).toMatchObject({ sink: 'out', cause: 'Cannot find native binding (test)' });
    const count = (ds: string) =>
      receiver.batches.filter((b) => b.dataset === ds).reduce((a, b) => a + b.events.length, 0);
    await until('both agents to deliver every event', () => count('without') === 500 && count('with') === 500);
    expect(without.logs.filter((l) => l.msg === WARNING)).toHaveLength(1);
    expect(withBinary.logs.some((l) => l.msg === WARNING)).toBe(false);
  });
});
