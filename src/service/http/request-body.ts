/**
 * A request's raw body read whole (decompressed, within its limits and the shared budget), for the routes
 * that take binary bodies (OTLP). A body refused before it was read to its end leaves the connection: what
 * is left of it is drained and the connection closed, so the next request on it is not read from its middle.
 */
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type BodyBudget, type BodyLimits, type HeldBody, readBody } from '../../ingest/body.js';
import { letGoOfUnreadBody } from '../../util/unread-body.js';

export function readRequestBody(
  req: FastifyRequest,
  reply: FastifyReply,
  limits: BodyLimits,
  budget: BodyBudget,
  /** How many copies of the body the route holds at once (a decoder's copy besides it). */
  copies: number,
): Promise<HeldBody> {
  const source = (req.body as Readable | undefined) ?? req.raw;
  return readBody(source, req.headers['content-encoding'], limits, budget, 'the service', [], copies).catch(
    (e: unknown) => {
      if (!req.raw.complete) {
        void reply.header('connection', 'close');
        letGoOfUnreadBody(req.raw);
      }
      throw e;
    },
  );
}
