/**
 * Each component's counters as one row (`GET /components`, which `ferry top` reads every second and turns
 * into rates): events in and out, dropped, errors, and for sinks the queue and state, for sources the
 * bytes not read yet. The same numbers as /metrics, by component rather than by family.
 */
import type { AgentConfig } from './config.js';
import type { Pipeline } from './pipeline/pipeline.js';

export interface ComponentStats {
  name: string;
  kind: 'source' | 'transform' | 'sink';
  type: string;
  /** Events (lines, for a source) taken in. */
  eventsIn: number;
  eventsOut: number;
  /** Events dropped on purpose (transforms) or by a full queue (sinks). */
  dropped: number;
  /** Failures: expressions that gave null (transforms), attempts retried and events dead-lettered (sinks), errors a source counts. */
  errors: number;
  /** Bytes written to files and not read yet (file sources). */
  lagBytes?: number;
  queueBatches?: number;
  queueBytes?: number;
  /** A sink's delivery state (`ok`, `retrying`, `refused`…). */
  state?: string;
}

export function componentStats(p: Pipeline, cfg: AgentConfig): ComponentStats[] {
  const typeOf = new Map([...cfg.sources, ...cfg.transforms, ...cfg.sinks].map((c) => [c.name, c.type] as const));
  const rows: ComponentStats[] = [];
  for (const s of p.sources) {
    let lag: number | undefined;
    let errors = 0;
    for (const g of s.gauges?.() ?? []) {
      if (g.name.includes('_lag_bytes')) lag = (lag ?? 0) + g.value;
      else if (/_(errors|refused_connections|unreadable|failed_events)_total$/.test(g.name)) errors += g.value;
    }
    rows.push({
      name: s.name,
      kind: 'source',
      type: typeOf.get(s.name) ?? '',
      eventsIn: s.counters.linesIn,
      eventsOut: s.counters.linesIn,
      dropped: 0,
      errors,
      ...(lag !== undefined ? { lagBytes: lag } : {}),
    });
  }
  for (const t of p.transforms) {
    const c = t.counters;
    rows.push({
      name: t.name,
      kind: 'transform',
      type: typeOf.get(t.name) ?? '',
      eventsIn: c?.eventsIn ?? 0,
      eventsOut: c?.eventsOut ?? 0,
      dropped: c ? Object.values(c.dropped).reduce((a, b) => a + b, 0) : 0,
      errors: c?.errors ?? 0,
    });
  }
  for (const d of p.deliveries) {
    rows.push({
      name: d.o.name,
      kind: 'sink',
      type: typeOf.get(d.o.name) ?? '',
      eventsIn: d.counters.eventsIn,
      eventsOut: d.chain.counters.eventsOut,
      dropped: d.counters.droppedEvents,
      errors: d.chain.counters.retries + d.chain.counters.deadLettered,
      queueBatches: d.queue.depthRecords,
      queueBytes: d.queue.depthBytes,
      state: d.health.state,
    });
  }
  return rows;
}
