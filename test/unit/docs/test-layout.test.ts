/**
 * Tests are laid out by kind and then by the part they are about: `test/unit/` or `test/integration/`
 * (the vitest projects are chosen by these folders), then the `src/` folder of the part
 * (`test/integration/agent/delivery/`). Shared code sits in `test/support/`. A suite put anywhere else
 * would run in no project, or in the wrong one.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Folders named for what they test that are not under `src/`. */
const OUTSIDE_SRC = new Set(['docs', 'packaging']);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

describe('the layout of the tests', () => {
  it('puts every suite under unit/ or integration/, in the folder of the src/ part it tests', () => {
    const suites = walk('test').filter((f) => f.endsWith('.test.ts'));
    expect(suites.length).toBeGreaterThan(50);
    const misplaced = suites.filter((f) => {
      const [kind, ...rest] = relative('test', dirname(f)).split('/');
      if (kind !== 'unit' && kind !== 'integration') return true;
      if (rest.length === 0) return true;
      return !OUTSIDE_SRC.has(rest[0]!) && !existsSync(join('src', ...rest));
    });
    expect(misplaced, 'move these under test/{unit,integration}/<src folder>/').toEqual([]);
    const both = ['unit', 'integration'].map((k) => suites.filter((f) => f.startsWith(`test/${k}/`)).length);
    expect(both.every((n) => n > 10)).toBe(true);
  });

  it('keeps support code out of the suites folders', () => {
    const helpers = walk('test').filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(helpers.filter((f) => !f.startsWith('test/support/'))).toEqual([]);
  });
});
