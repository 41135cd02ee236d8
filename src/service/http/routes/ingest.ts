/** Ingest: POST /v1/ingest/{dataset} and the older /v1/datasets/{dataset}/ingest. */
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EventStore } from '../../store/event-store.js';
import { spoolToFile, type BodyLimits } from '../../ingest/body.js';
import { csvToNdjson, type CsvStats } from '../../ingest/csv.js';
import { formatRfc3339Nano } from '../../../util/time.js';
import { badRequest, HttpError, notFoundError } from '../errors.js';

type IngestRequest = FastifyRequest<{
  Params: { dataset: string };
  Querystring: Record<string, string | undefined>;
}>;

const JSON_TYPES = new Set(['application/json', '']);
const NDJSON_TYPES = new Set([
  'application/x-ndjson',
  'application/nd-json',
  'application/ndjson',
  'application/jsonl',
  'application/x-jsonlines',
]);
const CSV_TYPES = new Set(['text/csv', 'application/csv']);

function parseLabels(header: string | string[] | undefined): { labels: Record<string, unknown>; bytes: number } {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!text) return { labels: {}, bytes: 0 };
  let labels: unknown;
  try {
    labels = JSON.parse(text);
  } catch {
    throw badRequest('X-Axiom-Event-Labels must be a JSON object, e.g. {"region":"eu-west-1"}');
  }
  if (!labels || typeof labels !== 'object' || Array.isArray(labels)) {
    throw badRequest('X-Axiom-Event-Labels must be a JSON object, e.g. {"region":"eu-west-1"}');
  }
  return { labels: labels as Record<string, unknown>, bytes: Buffer.byteLength(text) };
}

export function ingestRoutes(app: FastifyInstance, store: EventStore, limits: BodyLimits): void {
  // Bodies reach the handler as raw streams: they are decompressed and spooled, never buffered whole.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));

  const handler = async (req: IngestRequest) => {
    const dataset = req.params.dataset;
    if (!store.hasDataset(dataset)) throw notFoundError(`dataset "${dataset}" not found`);

    const mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const isCsv = CSV_TYPES.has(mediaType);
    if (!isCsv && !JSON_TYPES.has(mediaType) && !NDJSON_TYPES.has(mediaType)) {
      throw new HttpError(
        415,
        `unsupported Content-Type "${mediaType}" (use application/json, application/x-ndjson or text/csv)`,
      );
    }
    const { labels, bytes: labelBytes } = parseLabels(req.headers['x-axiom-event-labels']);
    const q = req.query;
    const csvStats: CsvStats = { skipped: [], collisions: 0 };
    const convert = isCsv
      ? csvToNdjson(
          {
            delimiter: q['csv-delimiter'] || undefined,
            fields: String(req.headers['x-axiom-csv-fields'] ?? '')
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          },
          csvStats,
        )
      : [];
    const file = store.tempFile('ndjson');
    const source = (req.body as Readable | undefined) ?? req.raw;
    try {
      const body = await spoolToFile(
        source,
        req.headers['content-encoding'] as string | undefined,
        limits,
        file,
        convert,
      );
      const format = !isCsv && !NDJSON_TYPES.has(mediaType) && body.firstChar === '[' ? 'array' : 'ndjson';
      const result = await store.ingestFile(dataset, file, format, {
        timestampField: q['timestamp-field'] || undefined,
        timestampFormat: q['timestamp-format'] || undefined,
        labels,
      });
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
