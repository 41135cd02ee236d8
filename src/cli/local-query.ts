/**
 * `ferry query --local`: an APL query against the data directory itself, in this process, for when no
 * service runs (a stopped agent, a copied data directory, a host where the service is down). The store's
 * lock keeps it from opening a directory a running service holds: then the query goes to the service.
 */
import type { FerryConfig } from './config.js';
import { CommandError } from './service-client.js';
import type { EventStore } from '../service/store/event-store.js';
import type { MplResult } from '../service/query/mpl-queries.js';

export interface LocalQuery {
  apl: string;
  startTime?: string;
  endTime?: string;
}

export async function localQuery(cfg: FerryConfig, dataDir: string, q: LocalQuery): Promise<Record<string, unknown>> {
  const { QueryEngine } = await import('../service/query/engine.js');
  const { tabularResult } = await import('../service/query/results.js');
  return withLocalStore(cfg, dataDir, async (store) => {
    const engine = new QueryEngine(store, { timeoutMs: cfg.service.queryTimeoutMs, limits: cfg.service.queryLimits });
    // The owner of the files reads everything in them, as the owner token would.
    const prepared = await engine.prepare({ ...q, canQuery: () => true });
    return tabularResult(await engine.execute(prepared), (ds) => store.listFields(ds));
  });
}

/** `ferry query --mpl --local`: an MPL query of the data directory's metrics datasets. */
export async function localMplQuery(
  cfg: FerryConfig,
  dataDir: string,
  body: Record<string, unknown>,
): Promise<MplResult> {
  const { MplQueries } = await import('../service/query/mpl-queries.js');
  return withLocalStore(cfg, dataDir, async (store) => {
    const mpl = new MplQueries(store, { timeoutMs: cfg.service.queryTimeoutMs, limits: cfg.service.queryLimits });
    const result = await mpl.run({ ...body, mpl: body.mpl, canQuery: () => true });
    return { metadata: result.metadata, series: result.series } as MplResult;
  });
}

async function withLocalStore<T>(cfg: FerryConfig, dataDir: string, f: (store: EventStore) => Promise<T>): Promise<T> {
  // Loaded here: other commands never load DuckDB.
  const { EventStore } = await import('../service/store/event-store.js');
  const { queryFunctions } = await import('../service/query/functions.js');
  const s = cfg.service;
  let store;
  try {
    store = await EventStore.open({
      dataDir,
      memoryLimitBytes: s.memoryLimitBytes,
      checkpointThresholdBytes: s.checkpointThresholdBytes,
      threads: s.threads,
      maxFieldsPerDataset: s.maxFieldsPerDataset,
      defaultRetentionDays: s.retention.defaultDays,
      maxObjectBytes: 16 * 1024 * 1024,
      functions: await queryFunctions(s.jsBudget),
    });
  } catch (e) {
    const lock = /Conflicting lock is held in (\S+) \(PID (\d+)\)/.exec((e as Error).message);
    if (lock)
      throw new CommandError(
        `${dataDir} is held by a running service (${lock[1]}, PID ${lock[2]}): run the query without --local`,
        1,
      );
    throw new CommandError(`cannot open the store in ${dataDir}: ${(e as Error).message.split('\n')[0]}`, 1);
  }
  try {
    return await f(store);
  } catch (e) {
    throw new CommandError(`query failed: ${(e as Error).message}`, 1);
  } finally {
    await store.close();
  }
}
