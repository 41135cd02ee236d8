/**
 * Checks that the folders of a part of src/ form layers: a file imports (by a relative path) only from
 * layers ranked below its own. Used by the service's and the agent's layer tests.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/**
 * The imports under `root` that go against `rank` (lower sits below), and the files with no layer.
 * @param layerOf the layer of a file under root
 * @param typesFrom a file whose types any layer may import (the part's config)
 */
export function importsAgainstLayers(
  root: string,
  rank: Readonly<Record<string, number>>,
  layerOf: (file: string) => string,
  typesFrom: string,
): string[] {
  const wrong: string[] = [];
  for (const file of files(root)) {
    const from = layerOf(file);
    if (rank[from] === undefined) wrong.push(`${file}: "${from}" has no layer in this test`);
    for (const m of readFileSync(file, 'utf8').matchAll(/^import (type )?[^;]*? from '(\.[^']+)';/gms)) {
      const target = normalize(join(dirname(file), m[2]!)).replace(/\.js$/, '.ts');
      if (!target.startsWith(`${root}/`)) continue;
      const to = layerOf(target);
      if (to === from) continue;
      if (m[1] && target === typesFrom) continue;
      if ((rank[to] ?? 99) >= (rank[from] ?? -1)) wrong.push(`${file} (${from}) imports ${target} (${to})`);
    }
  }
  return wrong;
}
