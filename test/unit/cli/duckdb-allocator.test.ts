import { afterEach, describe, expect, it } from 'vitest';
import { chooseDuckdbAllocator, duckdbAllocatorConf } from '../../../src/cli/duckdb-allocator.js';

const MiB = 1024 * 1024;
const saved = process.env.DUCKDB_JE_MALLOC_CONF;
afterEach(() => {
  if (saved === undefined) delete process.env.DUCKDB_JE_MALLOC_CONF;
  else process.env.DUCKDB_JE_MALLOC_CONF = saved;
});

describe("DuckDB's allocator", () => {
  it('gives freed memory back at once under a small memory_limit, after a second from 512MiB on', () => {
    expect(duckdbAllocatorConf(128 * MiB)).toBe('dirty_decay_ms:0,muzzy_decay_ms:0');
    expect(duckdbAllocatorConf(512 * MiB - 1)).toBe('dirty_decay_ms:0,muzzy_decay_ms:0');
    expect(duckdbAllocatorConf(512 * MiB)).toBe('dirty_decay_ms:1000,muzzy_decay_ms:0');
    expect(duckdbAllocatorConf(4096 * MiB)).toBe('dirty_decay_ms:1000,muzzy_decay_ms:0');
  });

  it('leaves a setting of the environment as it is', () => {
    process.env.DUCKDB_JE_MALLOC_CONF = 'dirty_decay_ms:10000';
    chooseDuckdbAllocator(128 * MiB);
    expect(process.env.DUCKDB_JE_MALLOC_CONF).toBe('dirty_decay_ms:10000');
    delete process.env.DUCKDB_JE_MALLOC_CONF;
    chooseDuckdbAllocator(128 * MiB);
    expect(process.env.DUCKDB_JE_MALLOC_CONF).toBe('dirty_decay_ms:0,muzzy_decay_ms:0');
  });
});
