/** Notifiers: /v2/notifiers CRUD, each route with its notifiers capability. Secrets are never shown. */
import type { FastifyInstance } from 'fastify';
import type { Alerting } from '../../monitors/alerting.js';
import { notifierView } from '../../notifiers/notifier.js';

type IdParams = { Params: { id: string } };

export function notifierRoutes(app: FastifyInstance, alerting: Alerting): void {
  app.get('/v2/notifiers', async () => {
    return alerting.notifiers
      .list()
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map(notifierView);
  });

  app.post('/v2/notifiers', async (req) => {
    return notifierView(await alerting.createNotifier(req.principal, req.body));
  });

  app.get<IdParams>('/v2/notifiers/:id', async (req) => {
    return notifierView(alerting.getNotifier(req.params.id));
  });

  app.put<IdParams>('/v2/notifiers/:id', async (req) => {
    return notifierView(await alerting.updateNotifier(req.params.id, req.body));
  });

  app.delete<IdParams>('/v2/notifiers/:id', async (req, reply) => {
    await alerting.deleteNotifier(req.params.id);
    return reply.code(204).send();
  });
}
