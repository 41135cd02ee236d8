/** Ingest: POST /v1/ingest/{dataset} and the older /v1/datasets/{dataset}/ingest. */
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EventStore } from '../../store/event-store.js';
import { spoolToFile, type BodyLimits } from '../../../ingest/body.js';
import { csvToNdjson, type CsvStats } from '../../../ingest/csv.js';
import { formatRfc3339Nano } from '../../../util/time.js';
import { letGoOfUnreadBody } from '../../../util/unread-body.js';
import { bodyFormat, csvParams, parseLabels, timeParams } from '../../../ingest/request.js';
import { badRequest, notFoundError } from '../errors.js';
import { METRICS_KIND } from '../../metrics/metrics-store.js';

type IngestRequest = FastifyRequest<{
  Params: { dataset: string };
  Querystring: Record<string, string | undefined>;
}>;

export function ingestRoutes(app: FastifyInstance, store: EventStore, limits: BodyLimits): void {
  // Bodies reach the handler as raw streams: they are decompressed and spooled, never buffered whole.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));

  const handler = async (req: IngestRequest, reply: FastifyReply) => {
    const dataset = req.params.dataset;
    if (!store.hasDataset(dataset)) throw notFoundError(`dataset "${dataset}" not found`);
    if (store.getDataset(dataset).kind === METRICS_KIND)
      throw badRequest(
        `dataset "${dataset}" is a metrics dataset (kind ${METRICS_KIND}): it takes OTLP metrics at /v1/metrics (header x-axiom-metrics-dataset), not events`,
      );

    const format = bodyFormat(req.headers['content-type']);
    const { labels, bytes: labelBytes } = parseLabels(req.headers['x-axiom-event-labels']);
    const q = req.query;
    const time = timeParams(q);
    const csvStats: CsvStats = { skipped: [], collisions: 0 };
    const convert = format === 'csv' ? csvToNdjson(csvParams(q, req.headers['x-axiom-csv-fields']), csvStats) : [];
    const file = store.tempFile('ndjson');
    const source = (req.body as Readable | undefined) ?? req.raw;
    try {
      const body = await spoolToFile(
        source,
        req.headers['content-encoding'] as string | undefined,
        limits,
        file,
        convert,
      ).catch((e: unknown) => {
        // Refused before its end (a limit, a corrupt stream): the connection cannot carry another request.
        if (!req.raw.complete) {
          void reply.header('connection', 'close');
          letGoOfUnreadBody(req.raw);
        }
        throw e;
      });
      const layout = format === 'json' && body.firstChar === '[' ? 'array' : 'ndjson';
      // A CSV body is screened before its conversion makes JSON of it: the store looks itself.
      const facts = format === 'csv' ? undefined : body.facts;
      const result = await store.ingestFile(dataset, file, layout, { ...time, labels, facts });
      const receivedAt = formatRfc3339Nano(store.now());
      const csvFailures = csvStats.skipped.map((s) => ({
        timestamp: receivedAt,
        error: `CSV line ${s.line}: ${s.error}`,
      }));
      return {
        ingested: result.ingested,
        failed: result.failed + csvFailures.length,
        failures: [...csvFailures, ...result.failures],
        processedBytes: body.bytes + labelBytes,
        blocksCreated: 0,
        walLength: 0,
        // Present when two inputs named one field in some events (one value kept, README: Fields and types).
        ...(result.collisions + csvStats.collisions > 0
          ? { fieldCollisions: result.collisions + csvStats.collisions }
          : {}),
      };
    } finally {
      await rm(file, { force: true });
    }
  };

  app.post('/v1/ingest/:dataset', handler);
  app.post('/v1/datasets/:dataset/ingest', handler);
}
