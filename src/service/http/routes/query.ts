/**
 * Queries: POST /v1/query/_apl and /v1/datasets/_apl (?format=tabular|legacy), and the legacy
 * POST /v1/datasets/{dataset}/query. A query needs query|read on every dataset it reads.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { jsonChunks } from '../../../util/json-chunks.js';
import { exactJson, exactStringifier, holdsBigInts } from '../../../util/exact-json.js';
import { holdWhileSent } from '../../store/native-memory.js';
import type { QueryEngine, QueryOutcome, QueryRequest } from '../../query/engine.js';
import { legacyResult, tabularResult } from '../../query/results.js';
import type { EventStore } from '../../store/event-store.js';
import { LegacyRequestError, legacyToApl, type LegacyQuery } from '../../query/legacy-request.js';
import { canDataset } from '../../auth/capabilities.js';
import { badRequest } from '../errors.js';
import { parseDuration } from '../../../util/units.js';

type AplRequest = FastifyRequest<{
  Querystring: Record<string, string | undefined>;
  Body: Record<string, unknown> | undefined;
}>;

function checkFlags(q: Record<string, string | undefined>): void {
  const nocache = q.nocache;
  if (nocache !== undefined && !/^(true|false|True|False|1|0)?$/.test(nocache))
    throw badRequest(`nocache must be true or false, not "${nocache}"`);
  const sd = q['streaming-duration'];
  if (sd !== undefined && sd !== '' && sd !== 'auto') {
    try {
      parseDuration(sd);
    } catch {
      throw badRequest(`streaming-duration must be a duration such as 5s or auto, not "${sd}"`);
    }
  }
}

/** Text in an answer's tables past which it is sent in chunks as it is written (util/json-chunks.ts). */
const CHUNKED_FROM_CHARS = 1024 * 1024;

/** Whether the tables' texts and values reach `chars` (counted until they do). */
function textReaches(tables: QueryOutcome['tables'], chars: number): boolean {
  let n = 0;
  for (const t of tables)
    for (const col of t.values)
      for (const v of col) {
        n += typeof v === 'string' ? v.length : 8;
        if (n >= chars) return true;
      }
  return false;
}

/**
 * The answer as JSON, 64-bit integers past 2^53 written exactly (they come back as they were sent). A
 * large one is written a chunk at a time as the client reads it, not made whole first.
 */
function answer(reply: FastifyReply, body: unknown, tables: QueryOutcome['tables']): unknown {
  const exact = holdsBigInts(tables);
  if (textReaches(tables, CHUNKED_FROM_CHARS)) {
    const chunks = Readable.from(jsonChunks(body, exact ? exactStringifier() : JSON.stringify));
    chunks.once('error', (err) =>
      reply.log.error(
        { err, url: reply.request.url },
        'the answer failed while it was written; the client got it cut short',
      ),
    );
    // 'close' comes once it is sent and when the client goes away before (no onResponse then).
    reply.raw.once('close', holdWhileSent());
    return reply.header('content-type', 'application/json; charset=utf-8').send(chunks);
  }
  if (!exact) return body;
  return reply.header('content-type', 'application/json; charset=utf-8').send(exactJson(body));
}

export function queryRoutes(app: FastifyInstance, store: EventStore, engine: QueryEngine): void {
  const meta = (ds: string) => store.listFields(ds);

  const apl = async (req: AplRequest, reply: FastifyReply) => {
    const q = req.query;
    const format = q.format ?? 'tabular';
    if (format !== 'tabular' && format !== 'legacy')
      throw badRequest(`format must be tabular or legacy, not "${format}"`);
    checkFlags(q);
    const body = req.body ?? {};
    if (typeof body !== 'object' || Array.isArray(body))
      throw badRequest('the body must be a JSON object with an "apl" field');
    const cursor = typeof body.cursor === 'string' && body.cursor !== '' ? body.cursor : q.cursor || undefined;
    // The request's own page size: the rows are the lowest of it, the query's limit and the server's.
    const limit = body.limit;
    if (limit !== undefined && limit !== null && !(Number.isSafeInteger(limit) && (limit as number) > 0))
      throw badRequest(`limit must be a positive integer (rows per page), not ${JSON.stringify(limit)}`);
    const request: QueryRequest = {
      apl: body.apl as string,
      limit: typeof limit === 'number' ? limit : undefined,
      startTime: body.startTime,
      endTime: body.endTime,
      cursor,
      includeCursor: body.includeCursor === true,
      sysTime: format === 'legacy',
      exactIntegers: true,
      canQuery: (ds) => canDataset(req.principal, ds, 'query', 'read'),
    };
    const prepared = await engine.prepare(request); // checks query|read on every dataset the query reads
    const outcome = await engine.execute(prepared);
    const result =
      format === 'tabular'
        ? tabularResult(outcome, meta)
        : legacyResult(outcome, meta, { apl: request.apl, startTime: body.startTime, endTime: body.endTime });
    return answer(reply, result, outcome.tables);
  };
  app.post('/v1/query/_apl', apl);
  app.post('/v1/datasets/_apl', apl);

  // The legacy query: translated into APL, then run like any query; the answer is the legacy result.
  app.post(
    '/v1/datasets/:dataset/query',
    async (
      req: FastifyRequest<{
        Params: { dataset: string };
        Querystring: Record<string, string | undefined>;
        Body: LegacyQuery | undefined;
      }>,
      reply: FastifyReply,
    ) => {
      checkFlags(req.query);
      if (req.query.saveAsKind === 'apl') throw badRequest('saveAsKind=apl is not valid on the legacy query endpoint');
      const body = req.body ?? {};
      if (typeof body !== 'object' || Array.isArray(body))
        throw badRequest('the body must be a JSON object (a legacy query)');
      const dataset = req.params.dataset;
      let aplText: string;
      try {
        aplText = legacyToApl(dataset, body);
      } catch (e) {
        if (e instanceof LegacyRequestError) throw badRequest(e.message);
        throw e;
      }
      const request: QueryRequest = {
        apl: aplText,
        startTime: body.startTime,
        endTime: body.endTime,
        cursor: body.cursor || undefined,
        includeCursor: body.includeCursor === true,
        limit: typeof body.limit === 'number' && body.limit > 0 ? body.limit : undefined,
        sysTime: true,
        exactIntegers: true,
        canQuery: (ds) => canDataset(req.principal, ds, 'query', 'read'),
      };
      const prepared = await engine.prepare(request);
      const outcome = await engine.execute(prepared);
      return answer(reply, legacyResult(outcome, meta), outcome.tables);
    },
  );
}
