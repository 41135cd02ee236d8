/**
 * The `local` sink: writes batches into the embedded service's store in the same process, with the same
 * rule as HTTP ingest: a batch counts as delivered once DuckDB has it in its write-ahead log. Metric
 * points (from host_metrics, or OTLP metrics through the otlp source) go into a metrics dataset's series
 * and points, as POST /v1/metrics puts them.
 */
import { rm, writeFile } from 'node:fs/promises';
import type { EventStore, IngestOptions, IngestResult } from '../../service/store/event-store.js';
import { StoreError } from '../../service/store/errors.js';
import { screenBody } from '../../ingest/body-facts.js';
import { batchLines, metricLinesOf } from '../../ingest/metric-points.js';
import { METRICS_KIND } from '../../service/store/metrics-tables.js';
import type { Destination, SendOutcome, Sink, SinkSpec } from './sink.js';

export class LocalSink implements Sink {
  /** @param options time field and format, and labels, applied as on HTTP ingest */
  constructor(
    private readonly store: EventStore,
    private readonly dataset: string,
    private readonly options: IngestOptions = {},
  ) {}

  /** NDJSON: a batch queued compressed while this sink was an `axiom` one comes decompressed. */
  readonly encoding = 'none';

  async send(batch: Buffer, _encoding: 'none', to?: Destination): Promise<SendOutcome> {
    const dataset = to?.dataset ?? this.dataset;
    // The service's own datasets (monitor runs, the audit trail) are written by the service alone.
    if (dataset !== this.dataset && this.store.isSystemDataset(dataset))
      return {
        kind: 'refused',
        status: 403,
        reason: `dataset "${dataset}" is kept by the service itself`,
        config: false,
      };
    // An OTel signal's events go into a dataset of their kind or an events dataset, as the service's OTLP
    // routes have it: not into a dataset kept for another signal.
    const kind = to?.params?.datasetKind;
    if (kind && this.store.hasDataset(dataset)) {
      const has = this.store.getDataset(dataset).kind;
      if (has !== kind && has.startsWith('otel:'))
        return {
          kind: 'refused',
          status: 400,
          reason: `dataset "${dataset}" is of kind ${has}, not ${kind}`,
          config: false,
        };
    }
    // A dataset events brought with them is made on first use, as the sink's own was at its start.
    if (dataset !== this.dataset && !this.store.hasDataset(dataset)) {
      try {
        await this.store.createDataset({ name: dataset, who: 'agent local sink', kind: to?.params?.datasetKind });
      } catch (e) {
        // A name the store refuses (or reserves) is the events' problem: they are refused, as ingest refuses them.
        if (e instanceof StoreError && (e.kind === 'invalid' || e.kind === 'forbidden'))
          return { kind: 'refused', status: 400, reason: `dataset "${dataset}": ${e.message}`, config: false };
        if (!this.store.hasDataset(dataset)) throw e;
      }
    }
    if (kind === METRICS_KIND) return this.sendMetrics(batch, dataset);
    const file = this.store.tempFile('ndjson');
    await writeFile(file, batch);
    try {
      // A relayed request's parameters replace the sink's time settings; its labels join the sink's.
      const options: IngestOptions = {
        ...(to?.params
          ? {
              timestampField: to.params.timestampField,
              timestampFormat: to.params.timestampFormat,
              labels: { ...this.options.labels, ...to.params.labels },
            }
          : this.options),
        facts: screenBody(batch),
      };
      let r: IngestResult;
      try {
        r = await this.store.ingestFile(dataset, file, 'ndjson', options);
      } catch (e) {
        return storeRefusal(e, dataset);
      }
      const events = r.ingested + r.failed;
      return r.failures.length
        ? { kind: 'partly-refused', events, failures: r.failures.map((f) => f.error) }
        : { kind: 'delivered', events };
    } finally {
      await rm(file, { force: true });
    }
  }

  /** Metric points (metric-points.ts's events) into a metrics dataset's series and points. */
  private async sendMetrics(batch: Buffer, dataset: string): Promise<SendOutcome> {
    const lines = batchLines(batch.toString('utf8'));
    const { series, columns, refused } = metricLinesOf(lines);
    try {
      // Loaded on the first metrics batch: the sink's module is loaded by every agent, remote-only ones too.
      const { MetricsStore } = await import('../../service/metrics/metrics-store.js');
      await MetricsStore.of(this.store).ingest(dataset, series, columns, batch.length);
    } catch (e) {
      return storeRefusal(e, dataset);
    }
    return refused.length
      ? { kind: 'partly-refused', events: lines.length, failures: refused }
      : { kind: 'delivered', events: lines.length };
  }

  async close(): Promise<void> {
    // Nothing to cut short: a local write either commits or fails at once.
  }
}

/**
 * What a store's refusal means for the batch, as the service's status would mean it for an `axiom` sink:
 * more than memory_limit leaves one batch is split (413); a batch the dataset cannot take (past its field
 * limit) is dead-lettered (400) while later batches go on; a dataset deleted meanwhile is held and retried
 * (404, for the operator); anything else (the database reopening, a full disk) is retried.
 */
function storeRefusal(e: unknown, dataset: string): SendOutcome {
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof StoreError) {
    if (e.kind === 'too_large') return { kind: 'too-large' };
    if (e.kind === 'invalid') return { kind: 'refused', status: 400, reason: message, config: false };
    if (e.kind === 'not_found') return { kind: 'refused', status: 404, reason: message, config: true };
  }
  return { kind: 'retry', trouble: { kind: 'failing', message: `dataset "${dataset}": ${message}` } };
}

export const localSink: SinkSpec<undefined> = {
  type: 'local',
  summary: "the embedded service's store, in the same process (needs `service.enabled`)",
  options: {},
  needsService: true,
  configure: () => undefined,
  async create(_s, ctx) {
    const store = ctx.store!;
    // As with `ferry pipe --local`: the host's own store has nobody to create datasets for it.
    if (!store.hasDataset(ctx.dataset)) await store.createDataset({ name: ctx.dataset, who: `agent sink ${ctx.name}` });
    return new LocalSink(store, ctx.dataset, {
      timestampField: ctx.timestampField,
      timestampFormat: ctx.timestampFormat,
      labels: ctx.labels,
    });
  },
};
