/** The identities requests and monitors act as: the owner, or an API token with its capabilities. */
import type { Principal } from './capabilities.js';
import type { TokenRecord } from './token-store.js';

export const OWNER_ID = 'owner';

export function ownerPrincipal(): Principal {
  return { kind: 'personal', userId: OWNER_ID, name: 'Owner' };
}

export function tokenPrincipal(t: TokenRecord): Principal {
  return {
    kind: 'api',
    tokenId: t.id,
    name: t.name,
    datasetCapabilities: t.datasetCapabilities,
    orgCapabilities: t.orgCapabilities,
    expiresAt: t.expiresAt,
  };
}
