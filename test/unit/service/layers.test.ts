/**
 * The service's folders form layers: a folder imports only from folders below it, so the store knows
 * nothing of queries, and only the HTTP layer (and the service that assembles everything) knows HTTP.
 * Type-only imports of the service's config (src/service/config.ts) are allowed from any layer.
 */
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsAgainstLayers } from '../../support/layers.js';

const ROOT = 'src/service';
/** Lower numbers sit below higher ones; files directly in src/service assemble the rest ("top"). */
const RANK: Record<string, number> = {
  bodies: 0,
  store: 1,
  // Metrics datasets' series and points, over the store; the query engine asks a dataset's kind of it.
  metrics: 1.5,
  auth: 2,
  query: 2,
  audit: 3,
  annotations: 3,
  starred: 3,
  notifiers: 3,
  monitors: 4,
  http: 5,
  top: 6,
};

const layerOf = (file: string) => {
  const parts = relative(ROOT, file).split('/');
  return parts.length === 1 ? 'top' : parts[0]!;
};

describe('the service in layers', () => {
  it('every folder of src/service has a layer, and imports only from layers below it', () => {
    expect(importsAgainstLayers(ROOT, RANK, layerOf, `${ROOT}/config.ts`)).toEqual([]);
  });
});
