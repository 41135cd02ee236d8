/**
 * A batch as a queue record: the record's tag says the batch's encoding (its low three bits, as
 * `encodingTag` gives them) and, with DESTINATION_FLAG, that the payload starts with the batch's destination
 * ([u16 length][UTF-8 text]) before the body. The text is the dataset's name, followed, for events relayed
 * from an ingest request, by a NUL (which no dataset name holds) and the request's parameters as JSON.
 * Records without the flag go to the sink's own dataset.
 */
import type { IngestParams } from '../../ingest/request.js';
import type { Destination, Encoding } from '../sinks/sink.js';
import { encodingTag, recordEncoding } from './encoding.js';

const DESTINATION_FLAG = 8;
const MAX_DESTINATION_BYTES = 0xffff;

/** The payload pieces and tag of a batch going `to` a destination of its own (undefined: the sink's). */
export function queueRecord(body: Buffer[], encoding: Encoding, to?: Destination): { payload: Buffer[]; tag: number } {
  if (to === undefined) return { payload: body, tag: encodingTag(encoding) };
  const text = Buffer.from(to.params ? `${to.dataset}\u0000${JSON.stringify(to.params)}` : to.dataset);
  if (text.length > MAX_DESTINATION_BYTES)
    throw new Error(`a destination of ${text.length} bytes (dataset "${to.dataset}") cannot be queued`);
  const header = Buffer.alloc(2 + text.length);
  header.writeUInt16LE(text.length, 0);
  text.copy(header, 2);
  return { payload: [header, ...body], tag: encodingTag(encoding) | DESTINATION_FLAG };
}

/** A queued record read back: the batch's body, its encoding, and its destination when it has its own. */
export function readRecord(tag: number, payload: Buffer): { body: Buffer; encoding: Encoding; to?: Destination } {
  if ((tag & DESTINATION_FLAG) === 0) return { body: payload, encoding: recordEncoding(tag, payload) };
  const len = payload.length >= 2 ? payload.readUInt16LE(0) : -1;
  if (len < 0 || 2 + len > payload.length)
    throw new Error('a queued batch has a damaged destination header; it stays queued');
  const body = payload.subarray(2 + len);
  const text = payload.toString('utf8', 2, 2 + len);
  const nul = text.indexOf('\u0000');
  const to: Destination =
    nul < 0
      ? { dataset: text }
      : { dataset: text.slice(0, nul), params: JSON.parse(text.slice(nul + 1)) as IngestParams };
  return { body, encoding: recordEncoding(tag & ~DESTINATION_FLAG, body), to };
}
