/**
 * The agent's folders form layers as the service's do (test/unit/service/layers.test.ts): sources,
 * parsers and sinks know nothing of the pipeline; delivery knows sinks and the queue but not the
 * pipeline; the pipeline composes them; the config reads every registry; the daemon (agent.ts,
 * its API in api.ts, metrics.ts, component-stats.ts and the log's summary in activity-summary.ts) sits on top. Type-only imports of the agent's config (src/agent/config.ts) are allowed
 * from any layer.
 */
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsAgainstLayers } from '../../support/layers.js';

const ROOT = 'src/agent';
/** Lower numbers sit below higher ones; a file directly in src/agent is its own layer. */
const RANK: Record<string, number> = {
  'counters.ts': 0,
  queue: 0,
  sinks: 0,
  parsers: 0.5,
  sources: 1,
  'event.ts': 1.5,
  transforms: 2,
  delivery: 3,
  pipeline: 4,
  'config.ts': 5,
  'metrics.ts': 6,
  'component-stats.ts': 6,
  'activity-summary.ts': 6.2,
  'api.ts': 6.5,
  'agent.ts': 7,
};

const layerOf = (file: string) => relative(ROOT, file).split('/')[0]!;

describe('the agent in layers', () => {
  it('every folder and file of src/agent has a layer, and imports only from layers below it', () => {
    expect(importsAgainstLayers(ROOT, RANK, layerOf, `${ROOT}/config.ts`)).toEqual([]);
  });
});
