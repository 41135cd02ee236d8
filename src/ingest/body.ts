/**
 * Spools an ingest request body to a temp file, decompressing on the way (gzip, deflate, zstd) and
 * enforcing size limits on both the wire bytes and the decompressed bytes, so a small compressed bomb
 * cannot fill the disk. Decompression runs in zlib/zstd native code off the JS thread.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable, Transform, Writable, type TransformCallback } from 'node:stream';
import { promisify } from 'node:util';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createInflate, gunzip } from 'node:zlib';
import { DecompressStream } from 'zstd-napi';
import { IngestBodyError, invalidBody } from './errors.js';
import { BodyScreen, type BodyFacts } from './body-facts.js';

export interface BodyLimits {
  maxBodyBytes: number;
  maxDecompressedBytes: number;
}

export interface SpooledBody {
  /** Decompressed size in bytes (the ingest result's processedBytes, before labels). */
  bytes: number;
  /** First non-whitespace byte of the decompressed body, to tell a JSON array from NDJSON. */
  firstChar: string | undefined;
  /** What its decompressed bytes show (when screened). */
  facts?: BodyFacts;
}

class Counter extends Transform {
  bytes = 0;
  firstChar: string | undefined;
  constructor(
    private readonly limit: number,
    private readonly what: string,
    readonly screen?: BodyScreen,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      cb(new IngestBodyError('too_large', `${this.what} exceeds the limit of ${this.limit} bytes`));
      return;
    }
    if (this.firstChar === undefined) {
      for (const b of chunk) {
        if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09 && b !== 0xef && b !== 0xbb && b !== 0xbf) {
          this.firstChar = String.fromCharCode(b);
          break;
        }
      }
    }
    this.screen?.push(chunk);
    cb(null, chunk);
  }
}

// Larger than zlib's 16 KiB default: a large body then costs a few dozen callbacks and writes, not hundreds.
const CHUNK = 256 * 1024;

/** A Content-Encoding as its name: trimmed, lower case, empty when there is none. */
const encodingName = (encoding: string | undefined) => (encoding ?? '').trim().toLowerCase();

export function decompressor(encoding: string | undefined): Transform | undefined {
  switch (encodingName(encoding)) {
    case '':
    case 'identity':
      return undefined;
    case 'gzip':
    case 'x-gzip':
      return createGunzip({ chunkSize: CHUNK });
    case 'deflate':
      return createInflate({ chunkSize: CHUNK });
    case 'zstd':
      return new DecompressStream() as unknown as Transform;
    default:
      throw new IngestBodyError(
        'unsupported',
        `unsupported Content-Encoding "${encoding}" (use gzip, zstd, deflate or none)`,
      );
  }
}

/**
 * Decompresses `source` and writes it through `sink` (a file writer or a converter). Corrupt compressed
 * data is a 400; the limits are 413.
 */
export async function decodeBody(
  source: Readable,
  encoding: string | undefined,
  limits: BodyLimits,
  sinks: (Transform | Writable)[],
  screen?: BodyScreen,
): Promise<SpooledBody> {
  const wire = new Counter(limits.maxBodyBytes, 'request body');
  const plain = new Counter(limits.maxDecompressedBytes, 'decompressed request body', screen);
  const inflate = decompressor(encoding);
  // Whatever the decompressor itself fails on is the body's fault (zstd names its errors freely:
  // "Unknown frame descriptor", "Dictionary mismatch", "Data corruption detected"...).
  let inflateError: unknown;
  inflate?.once('error', (e) => (inflateError = e));
  try {
    const stages = [source, wire, ...(inflate ? [inflate] : []), plain, ...sinks] as unknown as [Readable, Writable];
    await pipeline(stages);
  } catch (e) {
    if (e instanceof IngestBodyError) throw e;
    const err = e as NodeJS.ErrnoException;
    // csv-parse's fatal errors (a quote never closed, bad characters after a quote) are the body's fault.
    if (err.code?.startsWith('CSV_')) throw invalidBody(`invalid CSV body: ${err.message}`);
    if (
      inflate &&
      (e === inflateError ||
        err.code?.startsWith('Z_') ||
        /zstd|incorrect header|unexpected end|invalid/i.test(err.message))
    ) {
      throw invalidBody(`cannot decompress ${encoding} body: ${err.message}`);
    }
    throw e;
  }
  return { bytes: plain.bytes, firstChar: plain.firstChar, ...(screen ? { facts: screen.facts() } : {}) };
}

/**
 * Decodes the body into `file`, through `convert` stages first if given (CSV → NDJSON), screening the
 * decompressed bytes on the way (body-facts.ts).
 */
export async function spoolToFile(
  source: Readable,
  encoding: string | undefined,
  limits: BodyLimits,
  file: string,
  convert: Transform[] = [],
): Promise<SpooledBody> {
  try {
    return await decodeBody(
      source,
      encoding,
      limits,
      [...convert, createWriteStream(file, { highWaterMark: CHUNK })],
      new BodyScreen(),
    );
  } catch (e) {
    await rm(file, { force: true });
    throw e;
  }
}

/** Decompressed bytes held in memory by bodies being read or handled, across the requests of one server. */
export class BodyBudget {
  used = 0;
  constructor(readonly limit: number) {}

  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used -= bytes;
  }
}

/** The refusal of a request that finds the budget held by others (503: retry). */
const busy = (budget: BodyBudget, what: string) =>
  new IngestBodyError(
    'busy',
    `${what} holds ${budget.used} bytes of request bodies already (its limit is ${budget.limit}); retry shortly`,
  );

/** Collects a decompressed body in memory, taking each chunk from the budget first. */
class Collector extends Writable {
  readonly chunks: Buffer[] = [];
  held = 0;

  constructor(
    private readonly budget: BodyBudget,
    private readonly what: string,
    private readonly weight: number,
  ) {
    super();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    const cost = chunk.length * this.weight;
    if (!this.budget.take(cost)) {
      cb(busy(this.budget, this.what));
      return;
    }
    this.held += cost;
    this.chunks.push(chunk);
    cb();
  }
}

/** A body read whole into memory: its decompressed bytes, given back to the budget with release(). */
export interface HeldBody {
  bytes: Buffer;
  /** Bytes after decompression (before any conversion). */
  size: number;
  /**
   * Takes `bytes` more from the budget for what the body becomes (its events), or
   * throws `busy` (the budget is held by other requests) or `too_large` (this request alone would pass it).
   */
  charge(bytes: number): void;
  release(): void;
}

/**
 * Reads a body whole into memory, decompressed, through `convert` stages (CSV to NDJSON), within the
 * limits (413) and the budget shared by the requests being handled (`busy`, 503). `what` names the holder
 * in the budget's message ("the agent", "the service"); `weight` is what each decompressed byte costs the
 * budget, for a caller that holds more than the bytes while it handles them (their text, decoded messages).
 */
export async function readBody(
  source: Readable,
  encoding: string | undefined,
  limits: BodyLimits,
  budget: BodyBudget,
  what: string,
  convert: Transform[] = [],
  weight = 1,
  /** The body's Content-Length, when it has one: a small gzip body is inflated whole (inflateWhole). */
  wireBytes?: number,
): Promise<HeldBody> {
  if (wireBytes !== undefined && wireBytes <= WHOLE_GZIP_BYTES && convert.length === 0 && isGzip(encoding)) {
    const compressed = await readBody(
      source,
      undefined,
      { maxBodyBytes: limits.maxBodyBytes, maxDecompressedBytes: limits.maxBodyBytes },
      budget,
      what,
    );
    // Given back before its inflated size is taken: the budget counts what a body inflates to, as the
    // streamed way does (which holds the bytes on the wire uncounted too, a chunk at a time).
    compressed.release();
    const whole = await inflateWhole(compressed.bytes, encoding!, limits, budget, what, weight);
    if (whole) return whole;
    // Its trailer said too much or too little: inflated as any other, streamed within the limits.
    return readBody(
      Readable.from([compressed.bytes], { objectMode: false }),
      encoding,
      limits,
      budget,
      what,
      convert,
      weight,
    );
  }
  const collector = new Collector(budget, what, weight);
  const release = () => {
    budget.give(collector.held);
    collector.held = 0;
  };
  try {
    const spooled = await decodeBody(source, encoding, limits, [...convert, collector]);
    const bytes = collector.chunks.length === 1 ? collector.chunks[0]! : Buffer.concat(collector.chunks);
    collector.chunks.length = 0;
    const held = collector.held;
    collector.held = 0;
    return heldBody(bytes, spooled.bytes, held, budget, what);
  } catch (e) {
    release();
    throw e;
  }
}

/** A body in memory, holding `held` of the budget until released. */
function heldBody(bytes: Buffer, size: number, held: number, budget: BodyBudget, what: string): HeldBody {
  return {
    bytes,
    size,
    charge(more) {
      if (held + more > budget.limit)
        throw new IngestBodyError(
          'too_large',
          `handling this body would take more than the ${budget.limit} bytes ${what} keeps for request bodies; send smaller ones`,
        );
      if (!budget.take(more)) throw busy(budget, what);
      held += more;
    },
    release() {
      budget.give(held);
      held = 0;
    },
  };
}

/** Gzip bodies up to this size on the wire are inflated whole when they are held in memory (inflateWhole). */
const WHOLE_GZIP_BYTES = 1024 * 1024;
/** What a whole body may inflate to by its trailer: more is streamed, taking the budget chunk by chunk. */
const WHOLE_GZIP_INFLATED = 8 * 1024 * 1024;

const isGzip = (encoding: string | undefined) => ['gzip', 'x-gzip'].includes(encodingName(encoding));
const gunzipAsync = promisify(gunzip);

/**
 * A small gzip body inflated in one call on libuv's pool into one buffer of the size its trailer says,
 * taken from the budget first. Streamed, each body cost chunk buffers and a copy joining them, on the
 * pool's threads' own malloc arenas: a relay holding four bodies at a time peaked 5 MiB higher
 * (docs/benchmarks.md). The trailer is only a claim (a body of several members gives its last member's
 * size): undefined when the body does not inflate to at most what it claims, and it goes the streamed way.
 */
async function inflateWhole(
  compressed: Buffer,
  encoding: string,
  limits: BodyLimits,
  budget: BodyBudget,
  what: string,
  weight: number,
): Promise<HeldBody | undefined> {
  const claimed = compressed.length >= 18 ? compressed.readUInt32LE(compressed.length - 4) : 0;
  // Deflate inflates at most 1032 times: a trailer claiming more (bytes forged after the data) is a lie.
  if (claimed > WHOLE_GZIP_INFLATED || claimed > limits.maxDecompressedBytes || claimed > compressed.length * 1032)
    return undefined;
  const held = claimed * weight;
  if (!budget.take(held)) throw busy(budget, what);
  let bytes: Buffer;
  try {
    bytes = await gunzipAsync(compressed, {
      chunkSize: Math.max(64, claimed + 64),
      maxOutputLength: Math.max(1, claimed),
    });
  } catch (e) {
    budget.give(held);
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return undefined;
    throw invalidBody(`cannot decompress ${encoding} body: ${(e as Error).message}`);
  }
  // What it inflated to, if less than it claimed; a buffer left mostly empty is not kept whole.
  if (bytes.buffer.byteLength > 2 * bytes.length + 64 * 1024) bytes = Buffer.from(bytes);
  budget.give(held - bytes.length * weight);
  return heldBody(bytes, bytes.length, bytes.length * weight, budget, what);
}
