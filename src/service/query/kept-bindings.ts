/**
 * Bound queries kept by their text, so a query asked again (a dashboard's refresh, a monitor's run, a
 * client's poll) skips parsing, binding and its compile check. A binding is kept only when nothing of the
 * request but its text shaped it: one that read the time (`now()`, `ago()`), the range's length
 * (`bin_auto`, rates) or the dataset list (patterns) is bound afresh each time. A kept binding is used
 * only while every dataset it looked up has the schema version it had then, and only for a caller who may
 * query each of them (checked again for every request, as binding does).
 */
import type { BoundQuery } from '../../apl/binder/bound.js';
import { RecentMap } from '../../util/recent-map.js';

export interface KeptBinding {
  bound: BoundQuery;
  /** Each name the binder looked up as a dataset, in order, with its schema version then (undefined: none). */
  looked: Map<string, number | undefined>;
}

export class KeptBindings {
  private readonly kept: RecentMap<string, KeptBinding>;

  constructor(capacity: number) {
    this.kept = new RecentMap(capacity);
  }

  /**
   * The binding kept for this text while it holds; `allowed` is asked for each dataset it looked up in
   * order and throws (as binding would) for one the caller may not query.
   */
  get(
    text: string,
    versionOf: (dataset: string) => number | undefined,
    allowed: (dataset: string) => void,
  ): KeptBinding | undefined {
    const k = this.kept.get(text);
    if (!k) return undefined;
    for (const [name, version] of k.looked) {
      allowed(name);
      if (versionOf(name) !== version) {
        this.kept.delete(text);
        return undefined;
      }
    }
    return k;
  }

  keep(text: string, k: KeptBinding): void {
    this.kept.set(text, k);
  }

  get size(): number {
    return this.kept.size;
  }
}
