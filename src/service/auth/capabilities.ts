/**
 * The capability model of API tokens (management.md §3): which actions a token may take on datasets and on
 * org-level resources. Pure functions; the HTTP layer asks them before acting.
 */

export type Action = 'create' | 'read' | 'update' | 'delete';
export type DatasetCapabilities = Record<string, Partial<Record<DatasetCapability, string[]>>>;
export type OrgCapabilities = Partial<Record<OrgArea, string[]>>;

export const DATASET_CAPABILITIES = {
  ingest: ['create'],
  query: ['read'],
  starredQueries: ['create', 'read', 'update', 'delete'],
  virtualFields: ['create', 'read', 'update', 'delete'],
  trim: ['update'],
  vacuum: ['update'],
  data: ['delete'],
  share: ['create', 'read', 'delete'],
} as const;
export type DatasetCapability = keyof typeof DATASET_CAPABILITIES;

const CRUD = ['create', 'read', 'update', 'delete'] as const;
export const ORG_CAPABILITIES = {
  annotations: CRUD,
  apiTokens: CRUD,
  auditLog: ['read'],
  billing: ['read', 'update'],
  dashboards: CRUD,
  datasets: CRUD,
  endpoints: CRUD,
  flows: CRUD,
  integrations: CRUD,
  monitors: CRUD,
  notifiers: CRUD,
  rbac: CRUD,
  sharedAccessKeys: ['read', 'update'],
  users: CRUD,
  views: CRUD,
} as const;
export type OrgArea = keyof typeof ORG_CAPABILITIES;

/** Who is calling: the owner's personal token acts as the owner with every right; API tokens carry capabilities. */
export type Principal =
  | { kind: 'personal'; userId: string; name: string }
  | {
      kind: 'api';
      tokenId: string;
      name: string;
      datasetCapabilities: DatasetCapabilities;
      orgCapabilities: OrgCapabilities;
      expiresAt?: string | null;
    };

export function principalId(p: Principal): string {
  return p.kind === 'personal' ? p.userId : p.tokenId;
}

/** Effective dataset rights = the union of the "*" entry and the dataset's own entry. */
export function canDataset(p: Principal, dataset: string, cap: DatasetCapability, action: Action): boolean {
  if (p.kind === 'personal') return true;
  const has = (entry: DatasetCapabilities[string] | undefined) => entry?.[cap]?.includes(action) ?? false;
  return has(p.datasetCapabilities['*']) || has(p.datasetCapabilities[dataset]);
}

export function canOrg(p: Principal, area: OrgArea, action: Action): boolean {
  if (p.kind === 'personal') return true;
  return p.orgCapabilities[area]?.includes(action) ?? false;
}

/** Whether the caller may see a dataset at all: any capability on it, or org-level dataset read. */
export function canSeeDataset(p: Principal, dataset: string): boolean {
  if (p.kind === 'personal' || canOrg(p, 'datasets', 'read')) return true;
  const nonEmpty = (e: DatasetCapabilities[string] | undefined) =>
    !!e && Object.values(e).some((a) => (a?.length ?? 0) > 0);
  return nonEmpty(p.datasetCapabilities['*']) || nonEmpty(p.datasetCapabilities[dataset]);
}

/** Checks capability objects from a request; returns the first problem as a sentence, or undefined. */
export function validateCapabilities(dataset: unknown, org: unknown): string | undefined {
  if (dataset !== undefined && dataset !== null) {
    if (typeof dataset !== 'object' || Array.isArray(dataset))
      return 'datasetCapabilities must be an object keyed by dataset name or "*"';
    for (const [ds, entry] of Object.entries(dataset)) {
      if (!entry || typeof entry !== 'object' || Array.isArray(entry))
        return `datasetCapabilities.${ds} must be an object`;
      for (const [cap, actions] of Object.entries(entry)) {
        const allowed = (DATASET_CAPABILITIES as Record<string, readonly string[]>)[cap];
        if (!allowed)
          return `datasetCapabilities.${ds}.${cap}: unknown capability (one of ${Object.keys(DATASET_CAPABILITIES).join(', ')})`;
        if (!Array.isArray(actions)) return `datasetCapabilities.${ds}.${cap} must be an array of actions`;
        for (const a of actions)
          if (!allowed.includes(a))
            return `datasetCapabilities.${ds}.${cap}: action "${a}" not allowed (one of ${allowed.join(', ')})`;
      }
    }
  }
  if (org !== undefined && org !== null) {
    if (typeof org !== 'object' || Array.isArray(org)) return 'orgCapabilities must be an object';
    for (const [area, actions] of Object.entries(org)) {
      const allowed = (ORG_CAPABILITIES as Record<string, readonly string[]>)[area];
      if (!allowed) return `orgCapabilities.${area}: unknown area (one of ${Object.keys(ORG_CAPABILITIES).join(', ')})`;
      if (!Array.isArray(actions)) return `orgCapabilities.${area} must be an array of actions`;
      for (const a of actions)
        if (!allowed.includes(a))
          return `orgCapabilities.${area}: action "${a}" not allowed (one of ${allowed.join(', ')})`;
    }
  }
  return undefined;
}

/** A token may only hand out rights its creator holds (management.md §3.3). Returns the first excess, if any. */
export function excessRights(
  creator: Principal,
  dataset: DatasetCapabilities,
  org: OrgCapabilities,
): string | undefined {
  if (creator.kind === 'personal') return undefined;
  for (const [ds, entry] of Object.entries(dataset)) {
    for (const [cap, actions] of Object.entries(entry)) {
      for (const a of actions ?? []) {
        const ok =
          ds === '*'
            ? creator.datasetCapabilities['*']?.[cap as DatasetCapability]?.includes(a)
            : canDataset(creator, ds, cap as DatasetCapability, a as Action);
        if (!ok) return `datasetCapabilities.${ds}.${cap}: ${a}`;
      }
    }
  }
  for (const [area, actions] of Object.entries(org)) {
    for (const a of actions ?? [])
      if (!canOrg(creator, area as OrgArea, a as Action)) return `orgCapabilities.${area}: ${a}`;
  }
  return undefined;
}
