/**
 * Annotations: /v2/annotations CRUD, each route with its annotations capability. An annotation is visible
 * to callers who can see all of its datasets; a list filters by `datasets` (a comma list or repeated),
 * `start` and `end` (RFC 3339; annotations overlapping the range).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { canSeeDataset, principalId } from '../../auth/capabilities.js';
import {
  type Annotation,
  annotationView,
  newAnnotationId,
  overlaps,
  readAnnotationBody,
} from '../../annotations/annotation.js';
import type { Alerting } from '../../monitors/alerting.js';
import type { EventStore } from '../../store/event-store.js';
import { notFound } from '../../store/errors.js';
import { FieldError, optionalTime } from '../../bodies/fields.js';
import { forbidden } from '../errors.js';

type IdParams = { Params: { id: string } };

function list(v: string | string[] | undefined): string[] {
  return (Array.isArray(v) ? v : v === undefined ? [] : [v])
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
}

export function annotationRoutes(app: FastifyInstance, alerting: Alerting, store: EventStore): void {
  const table = alerting.annotations;
  const visible = (req: FastifyRequest, a: Annotation) => a.datasets.every((d) => canSeeDataset(req.principal, d));
  const get = (req: FastifyRequest, id: string) => {
    const a = table.get(id);
    if (!a || !visible(req, a)) throw notFound(`annotation "${id}"`);
    return a;
  };
  /** Each dataset must exist and be one the caller can see (the same answer for both). */
  const checkDatasets = (req: FastifyRequest, datasets: string[]) => {
    for (const d of datasets) {
      if (!canSeeDataset(req.principal, d)) throw forbidden(`Forbidden: this token has no access to dataset "${d}"`);
      if (!store.hasDataset(d)) throw new FieldError('datasets', `holds "${d}", which is not a dataset`);
    }
  };

  app.get<{ Querystring: { datasets?: string | string[]; start?: string | string[]; end?: string } }>(
    '/v2/annotations',
    async (req) => {
      const wanted = list(req.query.datasets);
      // axiom-go sends its end as a second `start` (management.md: a known client bug): the later one is the end.
      const starts = (Array.isArray(req.query.start) ? req.query.start : req.query.start ? [req.query.start] : []).map(
        (s) => optionalTime(s, 'start'),
      );
      const start = starts[0] ?? null;
      const end = optionalTime(req.query.end, 'end') ?? (starts.length > 1 ? starts[starts.length - 1]! : null);
      return table
        .list()
        .filter((a) => visible(req, a))
        .filter((a) => !wanted.length || a.datasets.some((d) => wanted.includes(d)))
        .filter((a) => overlaps(a, start ? Date.parse(start) : undefined, end ? Date.parse(end) : undefined))
        .sort((a, b) => a.time.localeCompare(b.time))
        .map(annotationView);
    },
  );

  app.post('/v2/annotations', async (req) => {
    const now = alerting.nowIso();
    const fields = readAnnotationBody(req.body, now);
    checkDatasets(req, fields.datasets);
    return annotationView(
      await table.put({ ...fields, id: newAnnotationId(), createdAt: now, createdBy: principalId(req.principal) }),
    );
  });

  app.get<IdParams>('/v2/annotations/:id', async (req) => {
    return annotationView(get(req, req.params.id));
  });

  app.put<IdParams>('/v2/annotations/:id', async (req) => {
    const old = get(req, req.params.id);
    const fields = readAnnotationBody(req.body, alerting.nowIso(), old);
    checkDatasets(req, fields.datasets);
    const stored = await table.update(old.id, (cur) => ({ ...cur, ...fields }));
    if (!stored) throw notFound(`annotation "${old.id}"`);
    return annotationView(stored);
  });

  app.delete<IdParams>('/v2/annotations/:id', async (req, reply) => {
    get(req, req.params.id);
    await table.delete(req.params.id);
    return reply.code(204).send();
  });
}
