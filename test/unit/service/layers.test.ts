/**
 * The service's folders form layers: a folder imports only from folders below it, so the store knows
 * nothing of queries, and only the HTTP layer (and the service that assembles everything) knows HTTP.
 * Type-only imports of the service's config (src/service/config.ts) are allowed from any layer.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = 'src/service';
/** Lower numbers sit below higher ones; files directly in src/service assemble the rest ("top"). */
const RANK: Record<string, number> = {
  bodies: 0,
  store: 1,
  auth: 2,
  ingest: 2,
  query: 2,
  audit: 3,
  annotations: 3,
  starred: 3,
  notifiers: 3,
  monitors: 4,
  http: 5,
  top: 6,
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const layerOf = (file: string) => {
  const parts = relative(ROOT, file).split('/');
  return parts.length === 1 ? 'top' : parts[0]!;
};

describe('the service in layers', () => {
  it('every folder of src/service has a layer, and imports only from layers below it', () => {
    const wrong: string[] = [];
    for (const file of files(ROOT)) {
      const from = layerOf(file);
      if (RANK[from] === undefined) wrong.push(`${file}: folder "${from}" has no layer in this test`);
      for (const m of readFileSync(file, 'utf8').matchAll(/^import (type )?[^;]*? from '(\.[^']+)';/gms)) {
        const target = normalize(join(dirname(file), m[2]!)).replace(/\.js$/, '.ts');
        if (!target.startsWith(`${ROOT}/`)) continue;
        const to = layerOf(target);
        if (to === from) continue;
        if (m[1] && target === `${ROOT}/config.ts`) continue;
        if ((RANK[to] ?? 99) >= (RANK[from] ?? -1)) wrong.push(`${file} (${from}) imports ${target} (${to})`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
