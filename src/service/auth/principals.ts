/** The identities requests and monitors act as: a user (through a PAT), or an API token with its capabilities. */
import type { Principal } from './capabilities.js';
import { type Directory, OWNER_ID, type UserRecord } from './directory.js';
import type { TokenRecord } from './token-store.js';

export { OWNER_ID };

/** A user with the rights its roles give it now. */
export function userPrincipal(user: UserRecord, directory: Directory): Principal {
  return { kind: 'personal', userId: user.id, name: user.name, rights: directory.rightsOf(user.id) };
}

export function tokenPrincipal(t: TokenRecord): Principal {
  return {
    kind: 'api',
    tokenId: t.id,
    name: t.name,
    rights: { all: false, datasetCapabilities: t.datasetCapabilities, orgCapabilities: t.orgCapabilities },
    expiresAt: t.expiresAt,
  };
}
