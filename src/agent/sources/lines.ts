/**
 * Lines of a byte stream, with the longest line bounded: the first `maxLineBytes` of a longer line are
 * kept and marked truncated, the rest is skipped up to its newline, and reading goes on. `onLine` is
 * awaited, so a slow consumer pauses the stream.
 *
 * Not split2: split2 can only fail the stream on a long line (`maxLength`) or drop the whole line
 * (`skipOverflow`), and without a bound it buffers a line of any size in memory.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export interface LineStats {
  lines: number;
  truncated: number;
}

export async function forEachLine(
  input: Readable,
  maxLineBytes: number,
  onLine: (line: string, truncated: boolean) => Promise<void>,
): Promise<LineStats> {
  const stats: LineStats = { lines: 0, truncated: 0 };
  let parts: Buffer[] = [];
  let kept = 0;
  let skipping = false;
  const emit = async () => {
    let buf = Buffer.concat(parts);
    parts = [];
    kept = 0;
    if (buf.length > 0 && buf[buf.length - 1] === 0x0d && !skipping) buf = buf.subarray(0, -1);
    // A cut may fall inside a UTF-8 character: the decoder drops the incomplete tail.
    const line = skipping ? new StringDecoder('utf8').write(buf) : buf.toString('utf8');
    stats.lines++;
    if (skipping) stats.truncated++;
    const truncated = skipping;
    skipping = false;
    await onLine(line, truncated);
  };
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    while (start < data.length) {
      const nl = data.indexOf(0x0a, start);
      const end = nl < 0 ? data.length : nl;
      if (!skipping) {
        const room = maxLineBytes - kept;
        if (end - start > room) {
          parts.push(data.subarray(start, start + room));
          kept += room;
          skipping = true;
        } else {
          parts.push(data.subarray(start, end));
          kept += end - start;
        }
      }
      if (nl < 0) break;
      await emit();
      start = nl + 1;
    }
  }
  if (kept > 0 || skipping) await emit();
  return stats;
}
