/**
 * How DuckDB's allocator (jemalloc, read from DUCKDB_JE_MALLOC_CONF when DuckDB loads) gives freed memory
 * back to the system. Given back at once, the resident memory follows what is in use, but every batch and
 * query then faults its pages in afresh: bench:ingest spent a third of its CPU in the kernel doing so.
 * Kept for a second, pages freed by one batch serve the next: a quarter less CPU an event, for the freed
 * memory of about a second more at the peak (docs/benchmarks.md). Where memory_limit is small (local mode's
 * 128MiB), the bound on memory comes first.
 */
const KEEP_FREED_FROM_BYTES = 512 * 1024 * 1024;

export function duckdbAllocatorConf(memoryLimitBytes: number): string {
  return memoryLimitBytes >= KEEP_FREED_FROM_BYTES
    ? 'dirty_decay_ms:1000,muzzy_decay_ms:0'
    : 'dirty_decay_ms:0,muzzy_decay_ms:0';
}

/** Sets the allocator for the service's memory_limit unless the environment sets it; before DuckDB loads. */
export function chooseDuckdbAllocator(memoryLimitBytes: number): void {
  process.env.DUCKDB_JE_MALLOC_CONF ??= duckdbAllocatorConf(memoryLimitBytes);
}
