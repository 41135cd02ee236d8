/**
 * The agent's counters by component name. They belong to the agent, not to a pipeline: a reload (SIGHUP)
 * builds new sources and sinks that take over the counters of the ones with the same names, so a
 * Prometheus counter never goes back to zero while the process lives.
 */
export class CounterBook {
  private readonly entries = new Map<string, object>();

  /** The counters kept under `key`, made by `init` the first time. */
  get<T extends object>(key: string, init: () => T): T {
    let c = this.entries.get(key) as T | undefined;
    if (!c) this.entries.set(key, (c = init()));
    return c;
  }
}
