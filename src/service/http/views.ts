/** Wire shapes of resources, matching what the official clients decode (api-compat.md §4.3). */
import type { DatasetRecord, FieldRecord } from '../store/event-store.js';
import type { TokenRecord } from '../auth/token-store.js';

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
    samlAuthenticated: false,
    ...(secret ? { token: secret } : {}),
  };
}
