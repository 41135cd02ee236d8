/**
 * Compression of batches (src/util/codec.ts): every stage comes back as a frame or member of exactly its
 * bytes, whatever the sizes and however many compress at once; frames one after another read as the whole
 * body; and zstd compresses beside the event loop, which keeps running meanwhile.
 */
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decompress as zstdDecompress } from 'zstd-napi';
import { compress, decompress, zstdPoolProblem, type Codec } from '../../../src/util/codec.js';
import { testSeed } from '../../support/helpers.js';

/** Log-like text (compressible) or random bytes (not), of `size` bytes. */
function input(rnd: () => number, size: number): Buffer {
  if (rnd() < 0.3) return randomBytes(size);
  const line = `{"status":${200 + Math.floor(rnd() * 300)},"path":"/api/${Math.floor(rnd() * 1e6)}"}\n`;
  return Buffer.from(line.repeat(Math.ceil(size / line.length)).slice(0, size));
}

describe('codec', () => {
  it("zstd's binary for libuv's pool loads on this platform", () => {
    // Without it zstd still works, on the event loop: the agent would ship less per second, silently.
    expect(zstdPoolProblem()).toBeUndefined();
  });

  it('answers every stage with a frame of exactly its bytes, many at once, and frames concatenate', async () => {
    const { rnd, replay } = testSeed('CODEC_SEED', 'npx vitest run test/unit/util/codec.test.ts');
    for (const codec of ['zstd', 'gzip', 'zstd'] as Codec[]) {
      const inputs = Array.from({ length: 2 + Math.floor(rnd() * 24) }, () => {
        const r = rnd();
        return input(
          rnd,
          r < 0.1 ? 0 : r < 0.2 ? 2 * 1024 * 1024 + Math.floor(rnd() * 1000) : Math.floor(rnd() * 600_000),
        );
      });
      const originals = inputs.map((b) => Buffer.from(b));
      const frames = await Promise.all(inputs.map((b) => compress(b, codec)));
      // A stage may be filled again once its frame is answered: the frame does not share its memory.
      inputs.forEach((b) => b.fill(0x7b));
      frames.forEach((f, i) => {
        expect(decompress(f, codec).equals(originals[i]!), `${replay}: ${codec} stage ${i}`).toBe(true);
      });
      // A body of frames one after another decodes to the stages one after another.
      const body = Buffer.concat(frames);
      const whole = codec === 'zstd' ? zstdDecompress(body) : gunzipSync(body);
      expect(whole.equals(Buffer.concat(originals)), replay).toBe(true);
    }
  });

  it('zstd compresses beside the event loop: a callback runs while a large stage compresses', async () => {
    const big = input(() => 0.5, 48 * 1024 * 1024);
    let ran = false;
    const frame = compress(big, 'zstd');
    setImmediate(() => (ran = true));
    const out = await frame;
    expect(ran).toBe(true);
    expect(zstdDecompress(out).equals(big)).toBe(true);
  });

  it('none hands the stage on as it is', async () => {
    const b = Buffer.from('{"a":1}\n');
    expect(await compress(b, 'none')).toBe(b);
    expect(decompress(b, 'none')).toBe(b);
  });
});
