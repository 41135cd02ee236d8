/**
 * Spans and log records made and exported by the official OpenTelemetry JS SDK, with its OTLP/HTTP
 * exporters (protobuf: `-proto`; JSON: `-http`), to a URL with headers: what an instrumented application
 * sends. Resolves with the trace id of the trace it made, once the exporters have flushed.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { AggregationType, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

export type OtlpWire = 'proto' | 'json';

/**
 * A trace of `service`: a server span `GET /cart` (attributes http.method, http.route) with a client
 * child span `SELECT cart` that failed, and an event on the parent; exported through `wire`.
 */
export async function exportTrace(
  baseUrl: string,
  headers: Record<string, string>,
  service: string,
  wire: OtlpWire,
): Promise<{ traceId: string; parentId: string; childId: string }> {
  const o = { url: `${baseUrl}/v1/traces`, headers };
  const exporter = wire === 'proto' ? new ProtoTraceExporter(o) : new JsonTraceExporter(o);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'deployment.environment': 'test' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('shop-instrumentation', '1.0.0');
  const parent = tracer.startSpan('GET /cart', {
    kind: SpanKind.SERVER,
    attributes: { 'http.method': 'GET', 'http.route': '/cart' },
  });
  parent.addEvent('cache miss', { key: 'cart:42' });
  const child = tracer.startSpan(
    'SELECT cart',
    { kind: SpanKind.CLIENT, attributes: { 'db.system': 'postgresql' } },
    trace.setSpan(context.active(), parent),
  );
  await new Promise((r) => setTimeout(r, 5));
  child.setStatus({ code: SpanStatusCode.ERROR, message: 'connection reset' });
  child.end();
  parent.end();
  await provider.forceFlush();
  await provider.shutdown();
  return {
    traceId: parent.spanContext().traceId,
    parentId: parent.spanContext().spanId,
    childId: child.spanContext().spanId,
  };
}

/** Two log records of `service` (one WARN with a string body in a span's context, one with a map body). */
export async function exportLogs(
  baseUrl: string,
  headers: Record<string, string>,
  service: string,
  wire: OtlpWire,
  ids?: { traceId: string; spanId: string },
): Promise<void> {
  const o = { url: `${baseUrl}/v1/logs`, headers };
  const exporter = wire === 'proto' ? new ProtoLogExporter(o) : new JsonLogExporter(o);
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('shop-logger', '2.0.0');
  const spanContext = ids && trace.setSpanContext(context.active(), { ...ids, traceFlags: 1 });
  logger.emit({
    severityNumber: SeverityNumber.WARN,
    severityText: 'WARN',
    body: `cart of ${service} is slow`,
    attributes: { 'user.id': 42 },
    ...(spanContext ? { context: spanContext } : {}),
  });
  logger.emit({ severityNumber: SeverityNumber.INFO, severityText: 'INFO', body: { order: 7, items: ['a', 'b'] } });
  await provider.forceFlush();
  await provider.shutdown();
}

/** A length-delimited protobuf field (`n` its number): for bodies no SDK would send. */
export function protoField(n: number, inner: Buffer): Buffer {
  const head: number[] = [(n << 3) | 2];
  for (let v = inner.length; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      head.push(v);
      break;
    }
    head.push((v & 127) | 128);
  }
  return Buffer.concat([Buffer.from(head), inner]);
}

/** `count` empty messages in field `n`: two bytes each on the wire. */
export const emptyFields = (n: number, count: number) => Buffer.alloc(count * 2).fill(Buffer.from([(n << 3) | 2, 0]));

/** An ExportTraceServiceRequest of `count` empty spans (one resource, one scope). */
export const emptySpans = (count: number) => protoField(1, protoField(2, emptyFields(2, count)));

/**
 * Metrics of `service` made by the SDK's MeterProvider and exported once with the OTLP/HTTP protobuf
 * exporter: a monotonic counter `requests` (12 for route /a, 5 for /b), an up-down counter `queue.depth`
 * (+7 then -3), a histogram `latency` in ms (10, 20, 300 with bounds 0, 50, 100), an observable gauge
 * `memory.used` in By (1,048,576) and, through a view, an exponential histogram `sizes`. Each cumulative.
 * Resolves with the exporter's result code (0: success).
 */
export async function exportMetrics(
  baseUrl: string,
  headers: Record<string, string>,
  service: string,
): Promise<number> {
  const exporter = new ProtoMetricExporter({ url: `${baseUrl}/v1/metrics`, headers });
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'host.name': 'web-1' }),
    readers: [reader],
    views: [
      {
        instrumentName: 'latency',
        aggregation: { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: [0, 50, 100] } },
      },
      { instrumentName: 'sizes', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } },
    ],
  });
  const meter = provider.getMeter('shop-metrics', '1.0.0');
  const requests = meter.createCounter('requests', { unit: '{request}' });
  requests.add(12, { 'http.route': '/a', 'http.status_code': 200 });
  requests.add(5, { 'http.route': '/b', 'http.status_code': 500 });
  const depth = meter.createUpDownCounter('queue.depth');
  depth.add(7);
  depth.add(-3);
  const latency = meter.createHistogram('latency', { unit: 'ms' });
  for (const v of [10, 20, 300]) latency.record(v, { 'http.route': '/a' });
  meter.createObservableGauge('memory.used', { unit: 'By' }).addCallback((r) => r.observe(1_048_576, { pool: 'heap' }));
  meter.createHistogram('sizes').record(42);
  let code = -1;
  const export0 = exporter.export.bind(exporter);
  exporter.export = (metrics, done) =>
    export0(metrics, (result) => {
      code = result.code;
      // The SDK returns a code only: a failed export says why in the test's output.
      if (result.error) process.stderr.write(`OTLP metrics export to ${baseUrl} failed: ${String(result.error)}\n`);
      done(result);
    });
  // Shutting down collects and exports once.
  await provider.shutdown();
  return code;
}
