/** Resolves the caller of a request from its bearer token, and the guards routes use to demand rights. */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import {
  type Action,
  canDataset,
  canOrg,
  canSeeDataset,
  type DatasetCapability,
  type OrgArea,
  type Principal,
} from '../auth/capabilities.js';
import { hashSecret, isExpired, type TokenStore } from '../auth/token-store.js';
import { forbidden, unauthorized } from './errors.js';
import { OWNER_ID, type Directory } from '../auth/directory.js';
import { tokenPrincipal, userPrincipal } from '../auth/principals.js';

export class Authenticator {
  private readonly adminHash: Buffer;
  constructor(
    adminToken: string,
    private readonly tokens: TokenStore,
    private readonly directory: Directory,
  ) {
    this.adminHash = Buffer.from(hashSecret(adminToken), 'hex');
  }

  principalOf(authorization: string | undefined): Principal {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw unauthorized('Unauthorized: send Authorization: Bearer <token>');
    const secret = m[1]!;
    if (timingSafeEqual(Buffer.from(hashSecret(secret), 'hex'), this.adminHash)) {
      return userPrincipal(this.directory.user(OWNER_ID)!, this.directory);
    }
    if (secret.startsWith('xapt-')) {
      const user = this.directory.lookupPat(secret);
      if (!user) throw unauthorized('Unauthorized: invalid or expired token');
      return userPrincipal(user, this.directory);
    }
    const t = this.tokens.lookup(secret);
    if (!t || isExpired(t)) throw unauthorized('Unauthorized: invalid or expired token');
    return tokenPrincipal(t);
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

export function requireOrg(req: FastifyRequest, area: OrgArea, action: Action): void {
  if (!canOrg(req.principal, area, action)) {
    throw forbidden(`Forbidden: this token lacks the ${area}|${action} capability`);
  }
}

export function requireDataset(req: FastifyRequest, dataset: string, cap: DatasetCapability, action: Action): void {
  if (!canDataset(req.principal, dataset, cap, action)) {
    throw forbidden(`Forbidden: this token lacks the ${cap}|${action} capability on dataset "${dataset}"`);
  }
}

export function requireVisible(req: FastifyRequest, dataset: string): void {
  if (!canSeeDataset(req.principal, dataset))
    throw forbidden(`Forbidden: this token has no access to dataset "${dataset}"`);
}
