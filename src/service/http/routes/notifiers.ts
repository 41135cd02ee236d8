/**
 * Notifiers: /v2/notifiers CRUD, each route with its notifiers capability. Secrets are never shown, and
 * URLs that are credentials (Slack, Discord, Teams and webhook URLs) only to who may change the notifier;
 * changing or deleting another's notifier takes every right its maker holds.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Alerting } from '../../monitors/alerting.js';
import { type Notifier, notifierView } from '../../notifiers/notifier.js';

type IdParams = { Params: { id: string } };

export function notifierRoutes(app: FastifyInstance, alerting: Alerting): void {
  const view = (req: FastifyRequest, n: Notifier) =>
    notifierView(n, alerting.seesWhole(req.principal, n), Date.parse(alerting.nowIso()));
  app.get('/v2/notifiers', async (req) => {
    return alerting.notifiers
      .list()
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map((n) => view(req, n));
  });

  app.post('/v2/notifiers', async (req) => {
    return view(req, await alerting.createNotifier(req.principal, req.body));
  });

  app.get<IdParams>('/v2/notifiers/:id', async (req) => {
    return view(req, alerting.getNotifier(req.params.id));
  });

  app.put<IdParams>('/v2/notifiers/:id', async (req) => {
    return view(req, await alerting.updateNotifier(req.principal, req.params.id, req.body));
  });

  app.delete<IdParams>('/v2/notifiers/:id', async (req, reply) => {
    await alerting.deleteNotifier(req.principal, req.params.id);
    return reply.code(204).send();
  });
}
