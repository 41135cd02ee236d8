/**
 * The compressions batches travel and rest in (an HTTP body's Content-Encoding, a queued batch, an
 * archive file): gzip members and zstd frames concatenate, and every decoder reads such a body or file as
 * one stream, so a batch may be compressed in parts and files may grow by appended batches.
 */
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { constants as zlib, gunzipSync, gzip } from 'node:zlib';
import { compress as zstdCompress, decompress as zstdDecompress } from 'zstd-napi';

export type Codec = 'gzip' | 'zstd' | 'none';

const gzipAsync = promisify(gzip);
const ZSTD_LEVEL_1 = { compressionLevel: 1 };

interface ZstdEncoder {
  encode(data: Buffer): Promise<Buffer>;
}

/**
 * zstd at level 1 on libuv's thread pool, as gzip's runs: @toondepauw/node-zstd compresses a buffer there
 * (zstd-napi, which reads zstd bodies, only compresses on the caller's thread). Loaded at first use, not by
 * every command that imports this module. Where its prebuilt binary does not load (a platform it is not
 * built for, an install without optional dependencies), zstd compresses on the event loop instead, and a
 * sink that compresses with zstd says so as it starts.
 */
let zstdPool: { encoder: ZstdEncoder } | { problem: string } | undefined;

function loadZstdPool(): { encoder: ZstdEncoder } | { problem: string } {
  try {
    const { Encoder } = createRequire(import.meta.url)('@toondepauw/node-zstd') as {
      Encoder: new (level: number) => ZstdEncoder;
    };
    return { encoder: new Encoder(1) };
  } catch (e) {
    return { problem: (e as Error).message.split('\n')[0]! };
  }
}

/** Why zstd compresses on the event loop here (its binary for libuv's pool did not load); undefined if not. */
export function zstdPoolProblem(): string | undefined {
  zstdPool ??= loadZstdPool();
  return 'problem' in zstdPool ? zstdPool.problem : undefined;
}

/**
 * Compresses, off the event loop: gzip at level 1 (it shrinks JSON logs about 7×) and zstd at level 1
 * (less CPU per byte than gzip, and about 8×), both on libuv's thread pool (docs/benchmarks.md: level 1
 * against 3, the loop against a thread and the pool, measured).
 */
export async function compress(raw: Buffer, codec: Codec): Promise<Buffer> {
  switch (codec) {
    // One 128 KiB output chunk holds a compressed 512 KiB stage of log lines: no second chunk, no concat.
    case 'gzip':
      return gzipAsync(raw, { level: zlib.Z_BEST_SPEED, chunkSize: 128 * 1024 });
    case 'zstd':
      zstdPool ??= loadZstdPool();
      return 'encoder' in zstdPool
        ? zstdPool.encoder.encode(raw).catch(() => zstdCompress(raw, ZSTD_LEVEL_1))
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
