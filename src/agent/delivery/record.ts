/**
 * A batch as a queue record: the record's tag says the batch's encoding (its low three bits, as
 * `encodingTag` gives them) and, with DATASET_FLAG, that the payload starts with the batch's dataset
 * ([u16 length][UTF-8 name]) before the body. Records without the flag go to the sink's own dataset.
 */
import { encodingTag, recordEncoding, type Encoding } from './encoding.js';

const DATASET_FLAG = 8;
const MAX_DATASET_BYTES = 1024;

/** The payload pieces and tag of a batch of `dataset` (undefined: the sink's own). */
export function queueRecord(body: Buffer[], encoding: Encoding, dataset?: string): { payload: Buffer[]; tag: number } {
  if (dataset === undefined) return { payload: body, tag: encodingTag(encoding) };
  const name = Buffer.from(dataset);
  if (name.length > MAX_DATASET_BYTES) throw new Error(`a dataset name of ${name.length} bytes cannot be queued`);
  const header = Buffer.alloc(2 + name.length);
  header.writeUInt16LE(name.length, 0);
  name.copy(header, 2);
  return { payload: [header, ...body], tag: encodingTag(encoding) | DATASET_FLAG };
}

/** A queued record read back: the batch's body, its encoding, and its dataset when it has its own. */
export function readRecord(tag: number, payload: Buffer): { body: Buffer; encoding: Encoding; dataset?: string } {
  if ((tag & DATASET_FLAG) === 0) return { body: payload, encoding: recordEncoding(tag, payload) };
  const len = payload.length >= 2 ? payload.readUInt16LE(0) : -1;
  if (len < 0 || 2 + len > payload.length)
    throw new Error('a queued batch has a damaged dataset header; it stays queued');
  const body = payload.subarray(2 + len);
  return { body, encoding: recordEncoding(tag & ~DATASET_FLAG, body), dataset: payload.toString('utf8', 2, 2 + len) };
}
