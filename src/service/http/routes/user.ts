/** The calling identity: GET /v2/user and /v1/user (clients use it to validate credentials). */
import type { FastifyInstance } from 'fastify';

export function userRoutes(app: FastifyInstance): void {
  for (const path of ['/v1/user', '/v2/user']) {
    app.get(path, async (req) => {
      const p = req.principal;
      if (p.kind === 'personal') return { id: p.userId, name: p.name, email: '', role: { id: 'owner', name: 'owner' } };
      // An API token is not a user; it answers as itself so that credential checks still work.
      return { id: p.tokenId, name: p.name, email: '', role: { id: 'none', name: 'none' } };
    });
  }
}
