/**
 * OTLP/HTTP, as Axiom takes it: POST /v1/traces and /v1/logs with the dataset in X-Axiom-Dataset, protobuf
 * or JSON bodies (gzip, zstd, deflate). Each span or log record becomes an event with the field names of
 * Axiom's OTel datasets (src/ingest/otlp.ts), stored as an ingest stores events: the answer (an empty
 * Export…ServiceResponse, or its partialSuccess) comes once they are committed.
 *
 * Spans go into a dataset of kind `otel:traces:v1` (where `duration` is a timespan) or an events dataset,
 * log records into `otel:logs:v1` or an events dataset; a dataset kept for another signal refuses them.
 */
import { rm, writeFile } from 'node:fs/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BodyBudget, type BodyLimits } from '../../../ingest/body.js';
import { readRequestBody } from '../request-body.js';
import { otlpDecoder } from '../../../ingest/otlp-decoder.js';
import {
  eventsCost,
  otlpEncoding,
  otlpFullSuccess,
  OTLP_MAX_BYTES,
  type OtlpSignal,
} from '../../../ingest/otlp-http.js';
import type { EventStore } from '../../store/event-store.js';
import { badRequest, notFoundError } from '../errors.js';

/** The kinds of dataset each signal may go into. */
const KINDS: Record<OtlpSignal, readonly string[]> = {
  traces: ['otel:traces:v1', 'axiom:events:v1', 'service:events:v1'],
  logs: ['otel:logs:v1', 'axiom:events:v1', 'service:events:v1'],
};

/** Memory for OTLP bodies (and their decoder's copy) and their events, across requests. */
const INFLIGHT_BYTES = 4 * OTLP_MAX_BYTES;

export function otlpRoutes(app: FastifyInstance, store: EventStore, limits: BodyLimits): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  const budget = new BodyBudget(INFLIGHT_BYTES);

  const handler = (signal: OtlpSignal) => async (req: FastifyRequest, reply: FastifyReply) => {
    const dataset = String(req.headers['x-axiom-dataset']);
    if (!store.hasDataset(dataset)) throw notFoundError(`dataset "${dataset}" not found`);
    const { kind } = store.getDataset(dataset);
    if (!KINDS[signal].includes(kind))
      throw badRequest(
        `dataset "${dataset}" is of kind ${kind}; send ${signal} to a dataset of kind ${KINDS[signal][0]} (or an events dataset)`,
      );
    const encoding = otlpEncoding(req.headers['content-type']);
    const body = await readRequestBody(
      req,
      reply,
      {
        maxBodyBytes: limits.maxBodyBytes,
        maxDecompressedBytes: Math.min(limits.maxDecompressedBytes, OTLP_MAX_BYTES),
      },
      budget,
      2, // the body, and the copy its decoder works on
    );
    let events: string[];
    try {
      events = await otlpDecoder.decode(signal, body.bytes, encoding, OTLP_MAX_BYTES);
      // Spans repeat their resource: what the events take is counted too, while they are written out.
      body.charge(eventsCost(events));
    } catch (e) {
      body.release();
      throw e;
    }
    if (events.length > 0) {
      const file = store.tempFile('ndjson');
      try {
        await writeFile(file, `${events.join('\n')}\n`).finally(() => body.release());
        const result = await store.ingestFile(dataset, file, 'ndjson');
        if (result.failed > 0) {
          // The OTLP definitions (protobufjs and 0.8 MB of generated code) are loaded for a partial success
          // only: decoding is the worker's, and a full success is a constant.
          const { otlpSuccess } = await import('../../../ingest/otlp.js');
          const ok = otlpSuccess(encoding, signal, {
            rejected: result.failed,
            message: result.failures[0]?.error ?? '',
          });
          return reply.type(ok.contentType).send(ok.body);
        }
      } finally {
        await rm(file, { force: true });
      }
    }
    body.release();
    const ok = otlpFullSuccess(encoding);
    return reply.type(ok.contentType).send(ok.body);
  };

  app.post('/v1/traces', handler('traces'));
  app.post('/v1/logs', handler('logs'));
}
