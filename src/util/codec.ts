/**
 * The compressions batches travel and rest in (an HTTP body's Content-Encoding, a queued batch, an
 * archive file): gzip members and zstd frames concatenate, and every decoder reads such a body or file as
 * one stream, so a batch may be compressed in parts and files may grow by appended batches.
 */
import { promisify } from 'node:util';
import { constants as zlib, gunzipSync, gzip } from 'node:zlib';
import { compress as zstdCompress, decompress as zstdDecompress } from 'zstd-napi';

export type Codec = 'gzip' | 'zstd' | 'none';

const gzipAsync = promisify(gzip);
const ZSTD_LEVEL_1 = { compressionLevel: 1 };

/**
 * Compresses. gzip at level 1 runs on libuv's thread pool, off the event loop, and shrinks JSON logs about
 * 7×; zstd at level 1 runs on the loop, and still costs less CPU per byte and makes fewer bytes (about 8×)
 * (docs/benchmarks.md: level 1 against 3, and a thread of its own, measured).
 */
export async function compress(raw: Buffer, codec: Codec): Promise<Buffer> {
  switch (codec) {
    // One 128 KiB output chunk holds a compressed 512 KiB stage of log lines: no second chunk, no concat.
    case 'gzip':
      return gzipAsync(raw, { level: zlib.Z_BEST_SPEED, chunkSize: 128 * 1024 });
    case 'zstd':
      return zstdCompress(raw, ZSTD_LEVEL_1);
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
