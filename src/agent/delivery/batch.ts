/** A batch as delivery carries it: NDJSON lines, one event each, joined by newlines. */

/** A batch of serialised events as the queue and the sinks carry it. */
export function ndjson(lines: readonly string[]): Buffer {
  return Buffer.from(lines.join('\n'));
}

/** How many events a batch holds (its newlines plus one; memchr in native code). */
export function countLines(batch: Buffer): number {
  if (batch.length === 0) return 0;
  let n = 1;
  for (let i = batch.indexOf(10); i >= 0; i = batch.indexOf(10, i + 1)) n++;
  return n;
}

/** The events of a batch, for the slow paths that need them one by one (413 splitting, dead letters). */
export function splitLines(batch: Buffer): string[] {
  return batch.length === 0 ? [] : batch.toString('utf8').split('\n');
}
