/**
 * DuckDB's result chunks live in native memory, counted against its memory_limit, until V8 collects the
 * JavaScript objects that hold them. V8 does not see that memory: after queries that read wide or long
 * results its heap stays small, it has no reason to collect, and an ingest that needs the memory fails
 * with DuckDB's Out of Memory (as the hostile-input fuzz found; docs/benchmarks.md). So a full collection is asked for after every so many result
 * cells read, and once before a statement refused for memory is tried again.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Result cells read before a collection: with a cell at 16 bytes and more for strings, some tens of MB. */
const CELLS_PER_COLLECTION = 2_000_000;
/** Result text read before a collection: a few rows of long strings hold as much as millions of cells. */
const BYTES_PER_COLLECTION = 64 * 1024 * 1024;

let collect: (() => void) | undefined;
let cellsSince = 0;
let bytesSince = 0;

/** A full garbage collection, without starting Node with --expose-gc. */
export function collectGarbage(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
  cellsSince = 0;
  bytesSince = 0;
}

/**
 * Result bytes (as noteResultCells counts them) read since the last collection past which one follows the
 * answer: the result's values, the answer's JSON made from them and DuckDB's chunks are all garbage once it
 * is sent, and left to the collector's own pace they are still held when the next request needs the memory
 * (the hostile-input fuzz found a 32 MB page's ~160 MB still resident at the next ingest).
 */
const BYTES_BEFORE_COLLECTION_AFTER_ANSWER = 16 * 1024 * 1024;

/** Answers being written a chunk at a time: what they hold is not garbage yet. */
let answersBeingSent = 0;

/** Collects once an answer is sent, when the results read since the last collection were large. */
export function collectAfterLargeResults(): void {
  // A collection while a large answer is still sent would free little and put off the one that would.
  if (answersBeingSent === 0 && bytesSince >= BYTES_BEFORE_COLLECTION_AFTER_ANSWER) collectGarbage();
}

/** Notes an answer being sent a chunk at a time; the release (once it is sent or given up) may collect. */
export function holdWhileSent(): () => void {
  answersBeingSent++;
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    answersBeingSent--;
    collectAfterLargeResults();
  };
}

/** Notes a result read (its cells, and the bytes of its values); collects once enough has been read since the last collection. */
export function noteResultCells(cells: number, bytes = 0): void {
  cellsSince += cells;
  bytesSince += bytes;
  if (cellsSince >= CELLS_PER_COLLECTION || bytesSince >= BYTES_PER_COLLECTION) collectGarbage();
}

/** DuckDB's ways of saying it is short of memory: an allocation, or a block it could not pin (at commit). */
export function isOutOfMemory(e: unknown): boolean {
  return e instanceof Error && /Out of Memory Error|failed to pin block|failed to allocate/.test(e.message);
}
