/**
 * The audit trail: every management change and every refused request, as an event in the dataset
 * axiom-audit (readable with APL by identities holding auditLog:read). A record names who, what, on which
 * path and how it ended; never a body, a header or a query string, so no secret reaches it.
 */
import type { Logger } from 'pino';
import { AUDIT_DATASET, type Principal } from '../auth/capabilities.js';
import { EventLog } from '../store/event-log.js';
import type { EventStore } from '../store/event-store.js';

export interface AuditRecord {
  _time: string;
  identity: { kind: 'user' | 'apiToken' | 'anonymous'; id: string; name: string };
  /** The method and route, e.g. "POST /v2/users" or "DELETE /v2/rbac/roles/:id". */
  action: string;
  /** The path acted on (ids and names only). */
  target: string;
  outcome: 'ok' | 'refused' | 'failed';
  status: number;
  message: string | null;
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const MAX_TARGET = 512;

/** Whether a request goes into the trail: a refusal on any route, or a change through a management route. */
export function audited(method: string, status: number, isManagement: boolean, hidden = false): boolean {
  return hidden || status === 401 || status === 403 || (CHANGES.has(method) && isManagement);
}

export function auditRecord(
  p: Principal | null,
  method: string,
  route: string | undefined,
  url: string,
  status: number,
  message: string | undefined,
  hidden = false,
  now = new Date(),
): AuditRecord {
  const identity: AuditRecord['identity'] = !p
    ? { kind: 'anonymous', id: '', name: '' }
    : p.kind === 'personal'
      ? { kind: 'user', id: p.userId, name: p.name }
      : { kind: 'apiToken', id: p.tokenId, name: p.name };
  const path = url.split('?')[0]!;
  return {
    _time: now.toISOString(),
    identity,
    action: `${method} ${route ?? path.slice(0, MAX_TARGET)}`,
    target: path.length > MAX_TARGET ? `${path.slice(0, MAX_TARGET)}…` : path,
    outcome: hidden || status === 401 || status === 403 ? 'refused' : status < 400 ? 'ok' : 'failed',
    status,
    message: status >= 400 ? (message ?? null) : null,
  };
}

export function auditTrail(store: EventStore, log: Logger): EventLog<AuditRecord> {
  return new EventLog<AuditRecord>(
    store,
    AUDIT_DATASET,
    {
      description: 'Audit trail: management changes and refused requests',
      what: 'audit records',
      system: true,
    },
    log,
  );
}
