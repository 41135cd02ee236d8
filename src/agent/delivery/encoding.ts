/**
 * Body encodings of a batch, as a sink sends it (Content-Encoding) and as the queue keeps it: a sink that
 * compresses has its batches compressed once, before they are queued, so the queue holds (and fsyncs,
 * and reads back into memory) an eighth of the bytes and a retry does not compress again.
 *
 * A queued batch records its encoding in its record's tag. Batches queued by versions before tags say it
 * by their first bytes: gzip and zstd frames start with magic numbers that no NDJSON batch can start with
 * (0x1f is a control character, 0x28 `(`; a batch's first line is JSON).
 *
 * A batch is compressed in parts (the batcher's stages), one after another in the body: gzip members and
 * zstd frames concatenate, and every decoder (Go's gzip and zstd readers at Axiom, Node's zlib, zstd)
 * reads such a body as the whole batch.
 */
import type { Encoding } from '../sinks/sink.js';
import { compress, decompress } from '../../util/codec.js';

export type { Encoding };

/** Compresses a batch (../../util/codec.ts). */
export const encode: (raw: Buffer, encoding: Encoding) => Promise<Buffer> = compress;

/** The queue record tag of each encoding; 0 is a record queued before tags. */
const TAGS: Readonly<Record<Encoding, number>> = { none: 1, gzip: 2, zstd: 3 };
const BY_TAG = new Map(Object.entries(TAGS).map(([e, t]) => [t, e as Encoding]));

export function encodingTag(encoding: Encoding): number {
  return TAGS[encoding];
}

/** The encoding of a queued batch: from its record's tag, or from its magic number when it has none. */
export function recordEncoding(tag: number, batch: Buffer): Encoding {
  const known = BY_TAG.get(tag);
  if (known) return known;
  if (tag !== 0)
    throw new Error(
      `a queued batch says encoding ${tag}, which this version does not know (queued by a later version?); it stays queued`,
    );
  if (batch.length >= 2 && batch[0] === 0x1f && batch[1] === 0x8b) return 'gzip';
  if (batch.length >= 4 && batch.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
  return 'none';
}

/** The NDJSON of a batch, for the slow paths that need its lines (413 splitting, dead letters). */
export const decode: (batch: Buffer, encoding: Encoding) => Buffer = decompress;
