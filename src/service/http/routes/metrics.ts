/**
 * Metrics (reference metrics.md §2, §4.4–4.8): POST /v1/metrics takes OTLP/HTTP protobuf metrics (gzip,
 * zstd, deflate) for the dataset in X-Axiom-Metrics-Dataset, of kind otel:metrics:v1, answered once
 * committed (an ExportMetricsServiceResponse, with partial_success counting the points refused); and the
 * discovery endpoints under /v1/query/metrics/info/datasets/{dataset}, each over `start` and `end` (RFC 3339).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BodyBudget, type BodyLimits } from '../../../ingest/body.js';
import { readRequestBody } from '../request-body.js';
import { IngestBodyError } from '../../../ingest/errors.js';
import { otlpDecoder } from '../../../ingest/otlp-decoder.js';
import {
  type DiscoveryRequest,
  type Listed,
  MAX_LISTED,
  METRICS_KIND,
  type MetricsStore,
  type SecondsRange,
} from '../../metrics/metrics-store.js';
import type { EventStore } from '../../store/event-store.js';
import { badRequest, notFoundError } from '../errors.js';
import type { MplQueries } from '../../query/mpl-queries.js';
import { canDataset } from '../../auth/capabilities.js';

/** Axiom's limit on a metrics body once decompressed (413 beyond). */
export const METRICS_MAX_BYTES = 4 * 1024 * 1024;
/** What the decoded series and points of one body may take (they repeat its tags). */
const LINES_MAX_BYTES = 16 * METRICS_MAX_BYTES;

type Info = FastifyRequest<{
  Params: { dataset: string; metric?: string; tag?: string };
  Querystring: { start?: string; end?: string };
}>;

/** `start` and `end` of a discovery request: required, RFC 3339 only (as Axiom's info endpoints). */
function rangeOf(q: { start?: string; end?: string }): SecondsRange {
  const one = (name: 'start' | 'end') => {
    const v = q[name];
    if (typeof v !== 'string' || v === '')
      throw badRequest(`${name} is required (RFC 3339, such as 2026-01-01T00:00:00Z)`);
    const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(v) ? Date.parse(v) : NaN;
    if (Number.isNaN(ms))
      throw badRequest(`${name} "${v.slice(0, 64)}" is not an RFC 3339 time (such as 2026-01-01T00:00:00Z)`);
    return Math.floor(ms / 1000);
  };
  const r = { start: one('start'), end: one('end') };
  if (r.start > r.end) throw badRequest(`start (${q.start}) is after end (${q.end})`);
  return r;
}

/** The ingest route: registered in a scope of its own (raw bodies). */
export function metricsIngestRoutes(
  app: FastifyInstance,
  store: EventStore,
  metrics: MetricsStore,
  limits: BodyLimits,
): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  // Bodies in flight and what their decoded series and points take, across requests.
  const budget = new BodyBudget(2 * LINES_MAX_BYTES);

  app.post('/v1/metrics', async (req: FastifyRequest, reply: FastifyReply) => {
    const dataset = String(req.headers['x-axiom-metrics-dataset']);
    if (!store.hasDataset(dataset)) throw notFoundError(`dataset "${dataset}" not found`);
    const { kind } = store.getDataset(dataset);
    if (kind !== METRICS_KIND)
      throw badRequest(
        `dataset "${dataset}" is of kind ${kind}: metrics go to a dataset of kind ${METRICS_KIND} (events and OTLP logs and traces to the others)`,
      );
    const media = String(req.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (media !== 'application/x-protobuf' && media !== 'application/protobuf')
      throw new IngestBodyError(
        'unsupported',
        `unsupported Content-Type "${media}" for OTLP metrics: send application/x-protobuf (OTLP/JSON is not taken for metrics, as Axiom)`,
      );
    const body = await readRequestBody(
      req,
      reply,
      {
        maxBodyBytes: limits.maxBodyBytes,
        maxDecompressedBytes: Math.min(limits.maxDecompressedBytes, METRICS_MAX_BYTES),
      },
      budget,
      2, // the body, and the copy its decoder works on
    );
    let decoded;
    try {
      decoded = await otlpDecoder.decodeMetrics(body.bytes, LINES_MAX_BYTES);
      // What the request holds: its points, and its series' texts (at most: a series sent before is shared).
      body.charge(
        decoded.series.reduce((n, e) => n + 2 * (e.key.length + e.rest.length) + 64, 0) +
          decoded.columns.buffer.byteLength,
      );
    } catch (e) {
      body.release();
      throw e;
    }
    try {
      await metrics.ingest(dataset, decoded.series, decoded.columns, body.bytes.length);
    } finally {
      body.release();
    }
    // The OTLP definitions are loaded on this thread for a partial success only (decoding is the worker's).
    const answer =
      decoded.rejected === 0
        ? Buffer.alloc(0)
        : (await import('../../../ingest/otlp-metrics.js')).otlpMetricsAnswer(decoded.rejected, decoded.firstRejection);
    return reply.type('application/x-protobuf').send(answer);
  });
}

/**
 * The discovery routes, each within the service's query_timeout and max_result_bytes; a list holds at
 * most MAX_LISTED entries (the first in order), and one cut short says so in `x-ferry-truncated`.
 */
export function metricsInfoRoutes(app: FastifyInstance, metrics: MetricsStore, mpl: MplQueries): void {
  const base = '/v1/query/metrics/info/datasets/:dataset';
  // One deadline for all of a request's statements.
  const request = (q: { start?: string; end?: string }): DiscoveryRequest => {
    const bounds = mpl.discoveryBounds;
    return {
      range: rangeOf(q),
      ...bounds,
      deadline: bounds.timeoutMs === undefined ? undefined : Date.now() + bounds.timeoutMs,
    };
  };
  const answer = <T>(reply: FastifyReply, listed: Listed<T>): T => {
    if (listed.truncated) void reply.header('x-ferry-truncated', String(MAX_LISTED));
    return listed.list;
  };
  app.get(`${base}/metrics`, async (req: Info, reply) =>
    answer(reply, await metrics.metrics(req.params.dataset, request(req.query))),
  );
  app.post<{ Params: { dataset: string }; Querystring: { start?: string; end?: string }; Body: { value?: unknown } }>(
    `${base}/metrics`,
    async (req, reply) => {
      const value = (req.body as { value?: unknown } | undefined)?.value;
      if (typeof value !== 'string') throw badRequest('body must be {"value": "<a tag value>"}');
      return answer(reply, await metrics.findMetrics(req.params.dataset, request(req.query), value));
    },
  );
  app.get(`${base}/metrics/:metric/tags`, async (req: Info, reply) =>
    answer(reply, await metrics.metricTags(req.params.dataset, req.params.metric!, request(req.query))),
  );
  app.get(`${base}/metrics/:metric/tags/:tag/values`, async (req: Info, reply) =>
    answer(
      reply,
      await metrics.metricTagValues(req.params.dataset, req.params.metric!, req.params.tag!, request(req.query)),
    ),
  );
  app.get(`${base}/tags`, async (req: Info, reply) =>
    answer(reply, await metrics.datasetTags(req.params.dataset, request(req.query))),
  );
  app.get(`${base}/tags/:tag/values`, async (req: Info, reply) =>
    answer(reply, await metrics.tagValues(req.params.dataset, req.params.tag!, request(req.query))),
  );
}

/**
 * POST /v1/query/_mpl (reference metrics.md §4.2): `{mpl, startTime, endTime, params}` (`apl` taken for
 * `mpl`, as Axiom's skills send it). `?format=metrics-v1` answers a bare array of series; `metrics-v2`, the
 * default, `{metadata, series}` with each series' summary; `Accept: application/vnd.metrics.v3+json` the v2
 * shape without summaries.
 */
export function mplRoutes(app: FastifyInstance, mpl: MplQueries): void {
  app.post<{ Querystring: { format?: string }; Body: Record<string, unknown> | undefined }>(
    '/v1/query/_mpl',
    async (req, reply) => {
      const format = req.query.format;
      if (format !== undefined && format !== 'metrics-v1' && format !== 'metrics-v2')
        throw badRequest(`format must be metrics-v1 or metrics-v2, not "${format}"`);
      const body = req.body ?? {};
      if (typeof body !== 'object' || Array.isArray(body))
        throw badRequest('the body must be a JSON object with an "mpl" field');
      const result = await mpl.run({
        mpl: body.mpl ?? body.apl,
        startTime: body.startTime,
        endTime: body.endTime,
        params: body.params,
        canQuery: (ds) => canDataset(req.principal, ds, 'query', 'read'),
      });
      const accept = String(req.headers.accept ?? '');
      const v3 = format === undefined && accept.includes('application/vnd.metrics.v3+json');
      const series = result.series.map((s) =>
        format === 'metrics-v1' || v3
          ? { metric: s.metric, tags: s.tags, start: s.start, resolution: s.resolution, data: s.data }
          : s,
      );
      void reply.header('content-type', v3 ? 'application/vnd.metrics.v3+json' : 'application/json; charset=utf-8');
      return format === 'metrics-v1' ? series : { metadata: result.metadata, series };
    },
  );
}
