/**
 * docs/architecture.md names files and folders; each must exist, so the map stays true as code moves. A
 * path is taken as written from the repository root (`src/agent/pipeline/`), or, written short
 * (`topology.ts`, `channels/index.ts`), as the end of some file's path; `{a,b}` stands for each of a and b.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (f === 'node_modules' || f.startsWith('.') || f === 'dist') return [];
    return statSync(p).isDirectory() ? [`${p}/`, ...files(p)] : [p];
  });
}

/** `a/{b,c}/d.ts` → a/b/d.ts, a/c/d.ts. */
function expand(path: string): string[] {
  const m = /^(.*?)\{([^}]*)\}(.*)$/.exec(path);
  if (!m) return [path];
  return m[2]!.split(',').flatMap((x) => expand(`${m[1]}${x}${m[3]}`));
}

describe('docs/architecture.md', () => {
  it('names only files and folders that exist', () => {
    const doc = readFileSync('docs/architecture.md', 'utf8');
    const all = ['src', 'test', 'bench', 'config', 'docs', 'systemd'].flatMap((d) => (existsSync(d) ? files(d) : []));
    const named = new Set<string>();
    for (const m of doc.matchAll(/`([A-Za-z0-9_./{},-]+)`/g)) {
      const p = m[1]!;
      if (/\.(ts|md|yaml|json)$/.test(p) || /^(src|test|bench|config|docs|systemd)\//.test(p)) named.add(p);
    }
    expect(named.size).toBeGreaterThan(50);
    const missing = [...named].flatMap(expand).filter((p) => {
      if (/^(src|test|bench|config|docs|systemd)\//.test(p)) return !existsSync(p);
      return !all.some((f) => f.endsWith(`/${p}`) || f.endsWith(`/${p}/`));
    });
    expect(missing).toEqual([]);
  });
});
