import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Directories made by tempDir in this test file, removed when it ends (test/support/setup.ts). */
const madeDirs: string[] = [];

export function tempDir(prefix = 'ferry-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

/** Removes this file's temporary directories; FERRY_KEEP_TEST_DIRS=1 keeps them to look into a failure. */
export function removeTempDirs(): void {
  if (process.env.FERRY_KEEP_TEST_DIRS === '1') return;
  for (const dir of madeDirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}
