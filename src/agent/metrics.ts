/** The agent's counters and gauges in the Prometheus text format (version 0.0.4). */
import type { Pipeline } from './pipeline/pipeline.js';
import type { Gauge } from './sources/source.js';
import type { RunningService } from '../service/service.js';

interface Family {
  type: 'counter' | 'gauge';
  help: string;
  samples: { labels: Record<string, string>; value: number }[];
}

function escape(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** @param taps the taps open now (`ferry tap`) */
export function renderMetrics(p: Pipeline | undefined, service?: RunningService, taps?: number): string {
  const alerting = service?.alerting;
  const families = new Map<string, Family>();
  const add = (name: string, type: Family['type'], help: string, labels: Record<string, string>, value: number) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { type, help, samples: [] }));
    f.samples.push({ labels, value });
  };
  for (const t of p?.transforms ?? []) {
    const c = t.counters;
    if (!c) continue;
    const l = { transform: t.name };
    add('ferry_transform_events_in_total', 'counter', 'Events a transform took', l, c.eventsIn);
    add('ferry_transform_events_out_total', 'counter', 'Events a transform passed on', l, c.eventsOut);
    add(
      'ferry_transform_errors_total',
      'counter',
      'Expressions that failed on an event and gave null (the event went on)',
      l,
      c.errors,
    );
    for (const [reason, n] of Object.entries(c.dropped))
      add(
        'ferry_transform_events_dropped_total',
        'counter',
        'Events a transform dropped on purpose, by reason (where, unmatched, unread, sampled, throttled, duplicate)',
        { ...l, reason },
        n,
      );
  }
  for (const s of p?.sources ?? []) {
    const l = { source: s.name };
    add('ferry_source_lines_total', 'counter', 'Lines read', l, s.counters.linesIn);
    add('ferry_source_bytes_total', 'counter', 'Bytes read', l, s.counters.bytesIn);
    add('ferry_source_truncated_lines_total', 'counter', 'Lines cut at max_line_bytes', l, s.counters.truncatedLines);
    for (const g of s.gauges?.() ?? ([] as Gauge[]))
      add(g.name, g.name.endsWith('_total') ? 'counter' : 'gauge', g.help, g.labels, g.value);
  }
  for (const r of p?.deliveries ?? []) {
    const l = { sink: r.o.name };
    add('ferry_sink_events_in_total', 'counter', 'Events handed to the sink', l, r.counters.eventsIn);
    add('ferry_sink_bytes_in_total', 'counter', 'Bytes of serialised events handed to the sink', l, r.counters.bytesIn);
    add('ferry_sink_events_out_total', 'counter', 'Events delivered', l, r.chain.counters.eventsOut);
    add(
      'ferry_sink_bytes_out_total',
      'counter',
      'Bytes sent (compressed, for the axiom sink)',
      l,
      r.chain.counters.bytesOut,
    );
    add(
      'ferry_sink_retries_total',
      'counter',
      'Delivery attempts that failed and were retried',
      l,
      r.chain.counters.retries,
    );
    add(
      'ferry_sink_dead_lettered_total',
      'counter',
      'Events refused by the receiver and written to the dead-letter file',
      l,
      r.chain.counters.deadLettered,
    );
    add(
      'ferry_sink_dropped_events_total',
      'counter',
      'Events dropped because the queue was full (when_full: drop_newest)',
      l,
      r.counters.droppedEvents,
    );
    add(
      'ferry_queue_ack_failures_total',
      'counter',
      'Deliveries the queue could not record (its disk); those batches are sent again after a restart',
      l,
      r.health.queueAckFailures,
    );
    add('ferry_queue_depth_batches', 'gauge', 'Batches queued and not yet delivered', l, r.queue.depthRecords);
    add(
      'ferry_queue_depth_bytes',
      'gauge',
      'Bytes queued and not yet delivered (compressed, as queued)',
      l,
      r.queue.depthBytes,
    );
  }
  if (taps !== undefined) add('ferry_taps', 'gauge', 'Taps open now (ferry tap)', {}, taps);
  const database = service?.database();
  if (database) {
    add(
      'ferry_service_database_reopens_total',
      'counter',
      'Times the database was reopened after a fatal error',
      {},
      database.reopens,
    );
    add(
      'ferry_service_database_reopening',
      'gauge',
      'Whether the database is being reopened now (requests answer 503)',
      {},
      database.reopening ? 1 : 0,
    );
    if (database.memoryBytes !== undefined)
      add(
        'ferry_service_duckdb_memory_bytes',
        'gauge',
        "Memory DuckDB's buffer manager holds (duckdb_memory()), read every 5 s",
        {},
        database.memoryBytes,
      );
  }
  for (const r of service?.records ?? [])
    add(
      'ferry_service_records_failed_total',
      'counter',
      'Records the service keeps about itself (audit trail, monitor runs) that could not be written',
      { dataset: r.dataset },
      r.failedRecords,
    );
  if (alerting) {
    const c = alerting.scheduler.counts;
    add('ferry_monitors', 'gauge', 'Monitors defined', {}, alerting.monitors.size);
    add('ferry_monitors_failing', 'gauge', 'Monitors whose last run failed', {}, alerting.health().failing.length);
    add('ferry_monitor_runs_total', 'counter', 'Monitor runs', {}, c.runs);
    add('ferry_monitor_run_errors_total', 'counter', 'Monitor runs that failed', {}, c.runErrors);
    add(
      'ferry_monitor_notifications_total',
      'counter',
      'Notifications by outcome',
      { outcome: 'sent' },
      c.notificationsSent,
    );
    add(
      'ferry_monitor_notifications_total',
      'counter',
      'Notifications by outcome',
      { outcome: 'failed' },
      c.notificationsFailed,
    );
    add(
      'ferry_monitor_skipped_ticks_total',
      'counter',
      'Monitor ticks passed over because runs fell behind',
      {},
      c.skippedTicks,
    );
    add(
      'ferry_monitor_suppressed_events_total',
      'counter',
      'Matching events past the MatchEvent notification caps',
      {},
      c.suppressed,
    );
    add(
      'ferry_notifier_outbox_mails',
      'gauge',
      'Mails held in the outbox: no SMTP server is configured, or it refused them',
      {},
      alerting.outbound.outbox.count,
    );
  }
  const mem = process.memoryUsage();
  const cpu = process.cpuUsage();
  add('process_resident_memory_bytes', 'gauge', 'Resident memory of the agent process', {}, mem.rss);
  add(
    'process_cpu_seconds_total',
    'counter',
    'CPU time of the agent process (user + system)',
    {},
    (cpu.user + cpu.system) / 1e6,
  );
  add('nodejs_heap_used_bytes', 'gauge', 'V8 heap in use', {}, mem.heapUsed);
  add(
    'nodejs_external_memory_bytes',
    'gauge',
    'Memory of Buffers and other objects outside the V8 heap',
    {},
    mem.external,
  );
  const out: string[] = [];
  for (const [name, f] of families) {
    out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`);
    for (const s of f.samples) {
      const labels = Object.entries(s.labels)
        .map(([k, v]) => `${k}="${escape(v)}"`)
        .join(',');
      out.push(labels ? `${name}{${labels}} ${s.value}` : `${name} ${s.value}`);
    }
  }
  return `${out.join('\n')}\n`;
}
