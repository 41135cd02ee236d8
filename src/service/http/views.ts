/** Wire shapes of resources, matching what the official clients decode (api-compat.md §4.3). */
import type { DatasetRecord, FieldRecord } from '../store/event-store.js';
import type { TokenRecord } from '../auth/token-store.js';
import type { GroupRecord, PatRecord, UserRecord } from '../auth/directory.js';
import type { RoleRecord } from '../auth/roles.js';

export function datasetView(d: DatasetRecord) {
  return {
    id: d.name,
    name: d.name,
    description: d.description,
    who: d.who,
    created: d.created,
    updatedAt: d.updatedAt,
    kind: d.kind,
    canWrite: true,
    retentionDays: d.retentionDays,
    useRetentionPeriod: d.useRetentionPeriod,
    mapFields: d.mapFields,
    ...(d.edgeDeployment ? { edgeDeployment: d.edgeDeployment } : {}),
  };
}

export function fieldView(f: Pick<FieldRecord, 'name' | 'type' | 'description' | 'unit' | 'hidden'>) {
  return { name: f.name, type: f.type, description: f.description, unit: f.unit, hidden: f.hidden };
}

/** The two built-in fields every dataset has. */
export const BUILTIN_FIELDS = [
  { name: '_sysTime', type: 'datetime', description: 'time the event was ingested', unit: '', hidden: false },
  { name: '_time', type: 'datetime', description: 'event time', unit: '', hidden: false },
];

export function tokenView(t: TokenRecord, secret?: string) {
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    expiresAt: t.expiresAt,
    datasetCapabilities: t.datasetCapabilities,
    orgCapabilities: t.orgCapabilities,
    viewCapabilities: t.viewCapabilities,
    samlAuthenticated: false,
    ...(secret ? { token: secret } : {}),
  };
}

export function userView(u: UserRecord, role: RoleRecord | undefined) {
  return { id: u.id, name: u.name, email: u.email, role: { id: u.role, name: role?.name ?? u.role } };
}

export function roleView(r: RoleRecord) {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    members: r.members,
    datasetCapabilities: r.datasetCapabilities,
    orgCapabilities: r.orgCapabilities,
    viewCapabilities: r.viewCapabilities,
  };
}

export function groupView(g: GroupRecord) {
  return { id: g.id, name: g.name, description: g.description, members: g.members, roles: g.roles, isManaged: false };
}

export function patView(p: PatRecord, secret?: string) {
  return {
    id: p.id,
    name: p.name,
    userId: p.userId,
    createdAt: p.createdAt,
    expiresAt: p.expiresAt,
    ...(secret ? { token: secret } : {}),
  };
}
