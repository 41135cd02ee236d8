/**
 * The compressions batches travel and rest in (an HTTP body's Content-Encoding, a queued batch, an
 * archive file): gzip members and zstd frames concatenate, and every decoder reads such a body or file as
 * one stream, so a batch may be compressed in parts and files may grow by appended batches.
 */
import { promisify } from 'node:util';
import { constants as zlib, gunzipSync, gzip } from 'node:zlib';
import { compress as zstdCompress, decompress as zstdDecompress } from 'zstd-napi';
import { ZstdThread } from './zstd-thread.js';

export type Codec = 'gzip' | 'zstd' | 'none';

const gzipAsync = promisify(gzip);
const ZSTD_LEVEL_1 = { compressionLevel: 1 };

/**
 * zstd's thread: slots of the size of the agent's batch stages (delivery/batcher.ts), one for each stage a
 * batcher compresses at once and one more for a second sink.
 */
const zstdThread = new ZstdThread({ slots: 4, slotBytes: 512 * 1024, level: 1, idleMs: 30_000 });

/**
 * Compresses, off the event loop: gzip at level 1 on libuv's thread pool (it shrinks JSON logs about 7×),
 * zstd at level 1 on a thread of its own (less CPU per byte than gzip, and about 8×) (docs/benchmarks.md:
 * level 1 against 3, the loop against a thread, measured).
 */
export async function compress(raw: Buffer, codec: Codec): Promise<Buffer> {
  switch (codec) {
    // One 128 KiB output chunk holds a compressed 512 KiB stage of log lines: no second chunk, no concat.
    case 'gzip':
      return gzipAsync(raw, { level: zlib.Z_BEST_SPEED, chunkSize: 128 * 1024 });
    case 'zstd':
      // What the thread cannot take (larger than a stage, or once it failed) is compressed here, on the loop.
      return zstdThread.takes(raw)
        ? zstdThread.compress(raw).catch(() => zstdCompress(raw, ZSTD_LEVEL_1))
        : zstdCompress(raw, ZSTD_LEVEL_1);
    case 'none':
      return raw;
  }
}

/** The bytes before compression (every member or frame, one after another). */
export function decompress(data: Buffer, codec: Codec): Buffer {
  switch (codec) {
    case 'gzip':
      return gunzipSync(data);
    case 'zstd':
      return zstdDecompress(data);
    case 'none':
      return data;
  }
}
