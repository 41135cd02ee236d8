/**
 * Lines of a byte stream (split2), with the longest line bounded: a longer line is cut at `maxLineBytes`,
 * marked, counted, and reading goes on. `onLine` is awaited, so a slow consumer pauses the stream.
 */
import type { Readable } from 'node:stream';
import split2 from 'split2';

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
  // split2 keeps an unterminated line in memory; maxLength makes it fail instead of growing without end,
  // so the limit here is on split2's side as well (a line over it is cut, not lost).
  const lines = input.pipe(split2({ maxLength: maxLineBytes * 4 }));
  for await (const raw of lines as AsyncIterable<string>) {
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    let truncated = false;
    if (Buffer.byteLength(line) > maxLineBytes) {
      line = Buffer.from(line).subarray(0, maxLineBytes).toString('utf8').replace(/\uFFFD$/, '');
      truncated = true;
      stats.truncated++;
    }
    stats.lines++;
    await onLine(line, truncated);
  }
  return stats;
}
