/** Resolves the caller of a request from its bearer token (what it may do is in rights.ts). */
import { timingSafeEqual } from 'node:crypto';
import type { Principal } from '../auth/capabilities.js';
import { hashSecret, isExpired, type TokenStore } from '../auth/token-store.js';
import { unauthorized } from './errors.js';
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
    const hash = hashSecret(secret);
    if (timingSafeEqual(Buffer.from(hash, 'hex'), this.adminHash)) {
      return userPrincipal(this.directory.user(OWNER_ID)!, this.directory);
    }
    if (secret.startsWith('xapt-')) {
      const user = this.directory.lookupPat(hash);
      if (!user) throw unauthorized('Unauthorized: invalid or expired token');
      return userPrincipal(user, this.directory);
    }
    const t = this.tokens.lookup(hash);
    if (!t || isExpired(t)) throw unauthorized('Unauthorized: invalid or expired token');
    return tokenPrincipal(t);
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    /** The message of the error the request was answered with, for the audit trail. */
    failure: string | undefined;
    /** Answered 404 for something that exists but the caller may not see: a refusal, for the audit trail. */
    hidden: boolean;
  }
}
