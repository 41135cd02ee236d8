/**
 * zstd on a thread of its own (src/util/zstd-thread.ts): every stage comes back as a frame of exactly its
 * bytes, whatever the interleaving of stages, sizes and slots; what a slot cannot hold is refused, not cut;
 * a thread that dies refuses what it held and takes nothing more, and codec.compress still compresses.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { decompress as zstdDecompress } from 'zstd-napi';
import { compress } from '../../../src/util/codec.js';
import { ZstdThread } from '../../../src/util/zstd-thread.js';
import { tempDir, testSeed, until } from '../../support/helpers.js';

const SLOT = 64 * 1024;
const thread = (o: Partial<ConstructorParameters<typeof ZstdThread>[0]> = {}) =>
  new ZstdThread({ slots: 3, slotBytes: SLOT, level: 1, idleMs: 30_000, ...o });

/** Log-like text (compressible) or random bytes (not), of `size` bytes. */
function input(rnd: () => number, size: number): Buffer {
  if (rnd() < 0.3) return randomBytes(size);
  const line = `{"status":${200 + Math.floor(rnd() * 300)},"path":"/api/${Math.floor(rnd() * 1e6)}"}\n`;
  return Buffer.from(line.repeat(Math.ceil(size / line.length)).slice(0, size));
}

describe('zstd thread', () => {
  it('answers every stage with a frame of exactly its bytes, with more stages than slots in flight', async () => {
    const { rnd, replay } = testSeed('ZSTD_THREAD_SEED', 'npx vitest run test/unit/util/zstd-thread.test.ts');
    const t = thread();
    for (let round = 0; round < 4; round++) {
      const inputs = Array.from({ length: 2 + Math.floor(rnd() * 20) }, () =>
        input(rnd, rnd() < 0.1 ? SLOT : Math.floor(rnd() * SLOT)),
      );
      const frames = await Promise.all(inputs.map((b) => t.compress(b)));
      frames.forEach((f, i) => {
        expect(f.readUInt32LE(0), replay).toBe(0xfd2fb528);
        expect(zstdDecompress(f).equals(inputs[i]!), `${replay}: stage ${i} of round ${round}`).toBe(true);
      });
      // A stage's input may be reused as soon as its frame is answered: the frame is a copy.
      inputs[0]!.fill(0);
      expect(zstdDecompress(frames[0]!).equals(inputs[0]!), replay).toBe(inputs[0]!.length === 0);
    }
    expect(t.failed).toBeUndefined();
  });

  it('refuses what a slot cannot hold, and codec.compress compresses it on the loop instead', async () => {
    const t = thread();
    const big = Buffer.alloc(SLOT + 1, 'a');
    expect(t.takes(big)).toBe(false);
    await expect(t.compress(big)).rejects.toThrow(/exceed a slot/);
    const huge = Buffer.alloc(3 * 1024 * 1024, 'b');
    expect(zstdDecompress(await compress(huge, 'zstd')).equals(huge)).toBe(true);
    const stage = Buffer.from('{"a":1}\n'.repeat(10_000));
    expect(zstdDecompress(await compress(stage, 'zstd')).equals(stage)).toBe(true);
  });

  it('stops when idle and starts again for the next stage', async () => {
    const t = thread({ idleMs: 50 });
    const a = Buffer.from('x'.repeat(1000));
    await t.compress(a);
    expect(t.running).toBe(true);
    await until('the idle thread to stop', () => !t.running, 5000);
    expect(zstdDecompress(await t.compress(a)).equals(a)).toBe(true);
  });

  it('a thread that dies refuses the stages it held and takes no more', async () => {
    const dir = tempDir('ferry-zstd-');
    const script = join(dir, 'dies.mjs');
    writeFileSync(
      script,
      `import { parentPort } from 'node:worker_threads';\nparentPort.on('message', () => process.exit(3));\n`,
    );
    const t = thread({ workerUrl: pathToFileURL(script) });
    const held = [
      t.compress(Buffer.from('a')),
      t.compress(Buffer.from('b')),
      t.compress(Buffer.from('c')),
      t.compress(Buffer.from('d')),
    ];
    for (const p of held) await expect(p).rejects.toThrow(/zstd thread exited \(3\)/);
    expect(t.takes(Buffer.from('e'))).toBe(false);
    await expect(t.compress(Buffer.from('e'))).rejects.toThrow(/exited/);
  });
});
