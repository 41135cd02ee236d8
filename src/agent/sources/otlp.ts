/**
 * The `otlp` source: OTLP/HTTP from applications' OpenTelemetry SDKs (or a collector), `POST /v1/traces`
 * and `/v1/logs` with protobuf or JSON bodies (gzip, zstd, deflate), as Axiom takes them: the dataset in
 * X-Axiom-Dataset (else the source's `traces_dataset` / `logs_dataset`); and `POST /v1/metrics`
 * (protobuf), the dataset in X-Axiom-Metrics-Dataset, each point an event for a metrics dataset. Each span or log record becomes an
 * event with the field names of Axiom's OTel datasets (src/ingest/otlp.ts), goes to that dataset, and the
 * request is answered (an empty Export…ServiceResponse) only once every event is in the disk queue of every
 * sink, as the relay answers. A local sink makes a missing dataset of the signal's kind (`otel:traces:v1`,
 * `otel:logs:v1`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { bytes, listen, str, strings, type OptionSpecs } from '../../config/options.js';
import { otlpDecoder } from '../../ingest/otlp-decoder.js';
import { eventsCost, OTLP_MAX_BYTES, otlpEncoding, otlpFullSuccess, type OtlpSignal } from '../../ingest/otlp-http.js';
import type { IngestParams } from '../../ingest/request.js';
import { pointEventsOf } from '../../ingest/metric-points.js';
import { datasetNameProblem } from '../../service/store/dataset-name.js';
import {
  HttpRefusal,
  LISTENING_OPTIONS,
  ListeningSource,
  type ListenerLog,
  type ListeningSettings,
} from './http-listener.js';
import { newSourceCounters, type Gauge, type SourceCounters, type SourceSpec } from './source.js';

export interface OtlpSourceSettings extends ListeningSettings {
  fallbackDatasets: Partial<Record<OtlpSignal | 'metrics', string>>;
}

const PATHS: Record<string, OtlpSignal> = { '/v1/traces': 'traces', '/v1/logs': 'logs' };

/**
 * What a body costs max_inflight_bytes per decompressed byte while it is handled: the body, and the copy
 * its decoder works on. Its events are counted once made.
 */
const OTLP_BODY_WEIGHT = 2;

/** How many times its decompressed size max_inflight_bytes must hold for the largest body. */
const OTLP_HEADROOM = 8;

/** One parameters object per signal: the batcher cuts batches where it changes. */
const PARAMS: Record<OtlpSignal, IngestParams> = {
  traces: { datasetKind: 'otel:traces:v1' },
  logs: { datasetKind: 'otel:logs:v1' },
};
const METRICS_PARAMS: IngestParams = { datasetKind: 'otel:metrics:v1' };

export interface OtlpSourceCounters extends SourceCounters {
  spans: number;
  logRecords: number;
  metricPoints: number;
}

export const newOtlpSourceCounters = (): OtlpSourceCounters => ({
  ...newSourceCounters(),
  spans: 0,
  logRecords: 0,
  metricPoints: 0,
});

export class OtlpSource extends ListeningSource<OtlpSourceCounters> {
  constructor(
    name: string,
    protected override readonly s: OtlpSourceSettings,
    log: ListenerLog,
    flush: () => Promise<void>,
    counters?: OtlpSourceCounters,
  ) {
    super(
      name,
      s,
      log,
      flush,
      counters ?? newOtlpSourceCounters(),
      'source started: taking OTLP/HTTP (POST /v1/traces, /v1/logs, /v1/metrics)',
    );
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, stopping: () => boolean): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const signal = Object.hasOwn(PATHS, path) ? PATHS[path] : undefined;
    if (!signal && path !== '/v1/metrics')
      throw new HttpRefusal(404, `route ${req.method} ${path.slice(0, 200)} not found`);
    if (req.method !== 'POST')
      throw new HttpRefusal(405, `${req.method} is not allowed here; export with POST`, { allow: 'POST' });
    if (!signal) return this.metrics(req, res, stopping);
    const header = req.headers['x-axiom-dataset'];
    const dataset = (typeof header === 'string' && header) || this.s.fallbackDatasets[signal];
    if (!dataset)
      throw new HttpRefusal(
        400,
        `send the dataset in the X-Axiom-Dataset header (or set the source's ${signal}_dataset)`,
      );
    this.checkDataset(dataset);
    const encoding = otlpEncoding(req.headers['content-type']);
    const body = await this.read(req, OTLP_BODY_WEIGHT);
    let events: string[];
    try {
      // Spans repeat their resource: a small body may make large events, bounded and counted as well.
      events = await otlpDecoder.decode(signal, body.bytes, encoding, this.s.maxDecompressedBytes * 4);
      body.charge(eventsCost(events));
    } catch (e) {
      body.release();
      throw e;
    }
    await this.handOff.queue(events, dataset, PARAMS[signal], stopping, res, body.release);
    this.counters.linesIn += events.length;
    this.counters.bytesIn += body.size;
    if (signal === 'traces') this.counters.spans += events.length;
    else this.counters.logRecords += events.length;
    const ok = otlpFullSuccess(encoding);
    res.writeHead(200, { 'content-type': ok.contentType, 'content-length': ok.body.length });
    res.end(ok.body);
  }

  /**
   * POST /v1/metrics: OTLP/HTTP protobuf metrics (JSON refused, as Axiom and the service refuse it) for the
   * dataset in X-Axiom-Metrics-Dataset (else `metrics_dataset`), each point an event of metric-points.ts's
   * form; points the decoder refuses (exponential histograms, unsupported attributes) are counted in the
   * answer's partial_success, as the service counts them.
   */
  private async metrics(req: IncomingMessage, res: ServerResponse, stopping: () => boolean): Promise<void> {
    const header = req.headers['x-axiom-metrics-dataset'];
    const dataset = (typeof header === 'string' && header) || this.s.fallbackDatasets.metrics;
    if (!dataset)
      throw new HttpRefusal(
        400,
        "send the dataset in the X-Axiom-Metrics-Dataset header (or set the source's metrics_dataset)",
      );
    this.checkDataset(dataset);
    if (otlpEncoding(req.headers['content-type']) !== 'protobuf')
      throw new HttpRefusal(
        415,
        'OTLP metrics are taken as protobuf (application/x-protobuf), not JSON, as Axiom takes them',
      );
    const body = await this.read(req, OTLP_BODY_WEIGHT);
    let events: string[];
    let rejected = 0;
    let firstRejection: string | undefined;
    try {
      const decoded = await otlpDecoder.decodeMetrics(body.bytes, this.s.maxDecompressedBytes * 4);
      events = await pointEventsOf(decoded.series, decoded.columns);
      rejected = decoded.rejected;
      firstRejection = decoded.firstRejection;
      body.charge(eventsCost(events));
    } catch (e) {
      body.release();
      throw e;
    }
    await this.handOff.queue(events, dataset, METRICS_PARAMS, stopping, res, body.release);
    this.counters.linesIn += events.length;
    this.counters.bytesIn += body.size;
    this.counters.metricPoints += events.length;
    const answer =
      rejected === 0
        ? Buffer.alloc(0)
        : (await import('../../ingest/otlp-metrics.js')).otlpMetricsAnswer(rejected, firstRejection);
    res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': answer.length });
    res.end(answer);
  }

  gauges(): Gauge[] {
    const labels = { source: this.name };
    return [
      ...this.listenerGauges({
        name: 'ferry_source_otlp_requests_total',
        help: 'OTLP export requests answered, by status code',
      }),
      { name: 'ferry_source_otlp_spans_total', help: 'Spans taken', labels, value: this.counters.spans },
      {
        name: 'ferry_source_otlp_log_records_total',
        help: 'Log records taken',
        labels,
        value: this.counters.logRecords,
      },
      {
        name: 'ferry_source_otlp_metric_points_total',
        help: 'Metric data points taken',
        labels,
        value: this.counters.metricPoints ?? 0,
      },
    ];
  }
}

const isLoopback = (host: string) =>
  host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));

const OTLP_SOURCE_OPTIONS = {
  address: listen('127.0.0.1:4318').doc('`host:port` to listen on (4318 is OTLP/HTTP’s port)'),
  tokens: strings()
    .doc('Bearer tokens senders must present; required when `address` is not a loopback address')
    .shown('none (loopback only)'),
  traces_dataset: str().doc('the dataset of spans sent without X-Axiom-Dataset').shown('the header is required'),
  logs_dataset: str().doc('the dataset of log records sent without X-Axiom-Dataset').shown('the header is required'),
  metrics_dataset: str()
    .doc('the metrics dataset of metrics sent without X-Axiom-Metrics-Dataset')
    .shown('the header is required'),
  ...LISTENING_OPTIONS,
  max_decompressed_bytes: bytes('16MiB').doc('… and bodies larger than this once decompressed (64 MiB at most)'),
  max_inflight_bytes: bytes('256MiB').doc(
    'memory for request bodies at once, across requests: each counts twice its decompressed size (the body and the copy its decoder works on) and its events; past it a request is answered 503 with Retry-After, or 413 when it alone would pass it',
  ),
} satisfies OptionSpecs;

export const otlpSource: SourceSpec<OtlpSourceSettings, typeof OTLP_SOURCE_OPTIONS> = {
  type: 'otlp',
  summary:
    'OTLP/HTTP logs, traces (protobuf or JSON) and metrics (protobuf) from OpenTelemetry SDKs: 200 once they are in the disk queue',
  options: OTLP_SOURCE_OPTIONS,
  configure(v, o) {
    const tokens = v.tokens ?? [];
    if (tokens.length === 0 && !isLoopback(v.address.host))
      o.fail('tokens', `give tokens: ${v.address.host} is not a loopback address, so anyone who reaches it could send`);
    if (v.max_decompressed_bytes > OTLP_MAX_BYTES)
      o.fail(
        'max_decompressed_bytes',
        `at most ${OTLP_MAX_BYTES / 1024 / 1024}MiB (a body is held whole in memory while it is converted)`,
      );
    if (v.max_decompressed_bytes * OTLP_HEADROOM > v.max_inflight_bytes)
      o.fail(
        'max_decompressed_bytes',
        `must be at most an eighth of max_inflight_bytes (a body counts twice its size there, and its events several times more, so a larger one might never be taken)`,
      );
    for (const key of ['traces_dataset', 'logs_dataset', 'metrics_dataset'] as const) {
      const problem = v[key] === undefined ? undefined : datasetNameProblem(v[key]);
      if (problem) o.fail(key, problem);
    }
    return {
      address: v.address,
      tokens,
      fallbackDatasets: { traces: v.traces_dataset, logs: v.logs_dataset, metrics: v.metrics_dataset },
      datasets: v.datasets,
      maxBodyBytes: v.max_body_bytes,
      maxDecompressedBytes: v.max_decompressed_bytes,
      maxInflightBytes: v.max_inflight_bytes,
      maxConnections: v.max_connections,
      idleTimeoutMs: v.idle_timeout,
      queueTimeoutMs: v.queue_timeout,
    };
  },
  create: (s, ctx) => new OtlpSource(ctx.name, s, ctx.log, () => ctx.flush(), ctx.counters(newOtlpSourceCounters)),
};
