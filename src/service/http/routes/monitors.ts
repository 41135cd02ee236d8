/**
 * Monitors: /v2/monitors CRUD, /v2/monitors/{id}/history and Ferry's /v2/monitors/{id}/runs. Each route needs its monitors capability; a
 * caller sees only monitors whose datasets it may query (others answer 404, as if absent).
 */
import type { FastifyInstance } from 'fastify';
import type { Alerting } from '../../monitors/alerting.js';
import { monitorView } from '../../monitors/monitor.js';
import { FieldError, optionalTime } from '../../bodies/fields.js';

type IdParams = { Params: { id: string } };

export function monitorRoutes(app: FastifyInstance, alerting: Alerting): void {
  app.get('/v2/monitors', async (req) => {
    return alerting.monitors
      .list()
      .filter((m) => alerting.canSee(req.principal, m))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map(monitorView);
  });

  app.post('/v2/monitors', async (req) => {
    return monitorView(await alerting.createMonitor(req.principal, req.body));
  });

  app.get<IdParams>('/v2/monitors/:id', async (req) => {
    return monitorView(alerting.visibleMonitor(req.principal, req.params.id));
  });

  app.put<IdParams>('/v2/monitors/:id', async (req) => {
    return monitorView(await alerting.updateMonitor(req.principal, req.params.id, req.body));
  });

  app.delete<IdParams>('/v2/monitors/:id', async (req, reply) => {
    await alerting.deleteMonitor(req.principal, req.params.id);
    return reply.code(204).send();
  });

  app.get<IdParams & { Querystring: { startTime?: string; endTime?: string } }>(
    '/v2/monitors/:id/history',
    async (req) => {
      const m = alerting.visibleMonitor(req.principal, req.params.id);
      const start = optionalTime(req.query.startTime, 'startTime');
      const end = optionalTime(req.query.endTime, 'endTime');
      if (!start) throw new FieldError('startTime', 'is required (RFC 3339)');
      if (!end) throw new FieldError('endTime', 'is required (RFC 3339)');
      if (start > end) throw new FieldError('startTime', `(${start}) is after endTime (${end})`);
      return (await alerting.history.list(m.id, start, end)).map(({ checkId, name, state, timestamp }) => ({
        checkId,
        name,
        state,
        timestamp,
      }));
    },
  );

  // Ferry's own: the monitor's recorded runs (README: the table of routes, and Monitors' Records), for the console's timeline.
  app.get<IdParams & { Querystring: { startTime?: string; endTime?: string; limit?: string } }>(
    '/v2/monitors/:id/runs',
    async (req) => {
      const start = optionalTime(req.query.startTime, 'startTime');
      const end = optionalTime(req.query.endTime, 'endTime');
      if (!start) throw new FieldError('startTime', 'is required (RFC 3339)');
      if (!end) throw new FieldError('endTime', 'is required (RFC 3339)');
      if (start > end) throw new FieldError('startTime', `(${start}) is after endTime (${end})`);
      const limitText = req.query.limit ?? String(RUNS_DEFAULT_LIMIT);
      const limit = Number(limitText);
      if (!/^\d+$/.test(limitText) || limit < 1 || limit > RUNS_MAX_LIMIT)
        throw new FieldError('limit', `must be a whole number from 1 to ${RUNS_MAX_LIMIT}, not "${limitText}"`);
      return alerting.runs(req.principal, req.params.id, Date.parse(start), Date.parse(end), limit);
    },
  );
}

const RUNS_DEFAULT_LIMIT = 100;
const RUNS_MAX_LIMIT = 1000;
