/**
 * The capability model of tokens and roles (management.md §3, §4): which actions an identity may take on
 * datasets and on org-level resources. Pure functions; the HTTP layer asks them before acting.
 */

import { own } from '../../util/lookup.js';
import { datasetNameProblem } from '../store/dataset-name.js';

export type Action = 'create' | 'read' | 'update' | 'delete';

/** The caller may not do this (HTTP 403); the message says what is missing. */
export class NotAllowed extends Error {
  constructor(message: string) {
    super(message.startsWith('Forbidden') ? message : `Forbidden: ${message}`);
    this.name = 'NotAllowed';
  }
}
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

/** What an identity may do: every right (the owner role), or its capabilities. */
export interface Rights {
  all: boolean;
  datasetCapabilities: DatasetCapabilities;
  orgCapabilities: OrgCapabilities;
}

export const NO_RIGHTS: Rights = { all: false, datasetCapabilities: {}, orgCapabilities: {} };

/**
 * Who is calling: a user through a personal access token, with the rights of its roles at the time of
 * the request; or an API token with the capabilities it was made with.
 */
export type Principal =
  | { kind: 'personal'; userId: string; name: string; rights: Rights }
  | { kind: 'api'; tokenId: string; name: string; rights: Rights; expiresAt?: string | null };

export function principalId(p: Principal): string {
  return p.kind === 'personal' ? p.userId : p.tokenId;
}

const hasAction = (entry: DatasetCapabilities[string] | undefined, cap: string, action: string) =>
  own(entry as Record<string, string[] | undefined> | undefined, cap)?.includes(action) ?? false;

/**
 * The audit trail's dataset: the service alone writes it, and reading it takes auditLog:read rather than
 * any dataset right ("*" included).
 */
export const AUDIT_DATASET = 'axiom-audit';

/**
 * The datasets of every monitor's runs (service.monitors.runs_dataset): a run records the value and the
 * error of a query over datasets the reader may not see, the audit trail among them. Read with query:read
 * on every dataset ("*") and auditLog:read; written by the service alone.
 */
const RUN_RECORDS = new Set<string>();

/** Names the dataset the monitor runs are recorded in (the service does, as it starts). */
export function keepRunRecords(dataset: string): void {
  RUN_RECORDS.add(dataset);
}

/** Effective dataset rights = the union of the "*" entry and the dataset's own entry. */
export function rightsAllowDataset(r: Rights, dataset: string, cap: DatasetCapability, action: Action): boolean {
  if (dataset === AUDIT_DATASET) return cap === 'query' && action === 'read' && rightsAllowOrg(r, 'auditLog', 'read');
  if (RUN_RECORDS.has(dataset))
    return (
      cap === 'query' &&
      action === 'read' &&
      (r.all || (hasAction(own(r.datasetCapabilities, '*'), 'query', 'read') && rightsAllowOrg(r, 'auditLog', 'read')))
    );
  if (r.all) return true;
  return (
    hasAction(own(r.datasetCapabilities, '*'), cap, action) ||
    hasAction(own(r.datasetCapabilities, dataset), cap, action)
  );
}

export function rightsAllowOrg(r: Rights, area: OrgArea, action: Action): boolean {
  return r.all || (own(r.orgCapabilities as Record<string, string[]>, area)?.includes(action) ?? false);
}

export function canDataset(p: Principal, dataset: string, cap: DatasetCapability, action: Action): boolean {
  return rightsAllowDataset(p.rights, dataset, cap, action);
}

export function canOrg(p: Principal, area: OrgArea, action: Action): boolean {
  return rightsAllowOrg(p.rights, area, action);
}

/**
 * Whether the caller may run queries at all: a user (its queries read what its roles allow), or a token
 * holding query:read on some dataset ("*" included) or auditLog:read. A query that reads no dataset still
 * runs work on the service, so a token made for ingest or management alone may not send one.
 */
export function canQuerySomething(p: Principal): boolean {
  if (p.kind === 'personal' || p.rights.all || canOrg(p, 'auditLog', 'read')) return true;
  return Object.values(p.rights.datasetCapabilities).some((e) => hasAction(e, 'query', 'read'));
}

/** Whether the caller may see a dataset at all: any capability on it, or org-level dataset read. */
export function canSeeDataset(p: Principal, dataset: string): boolean {
  if (dataset === AUDIT_DATASET) return canOrg(p, 'auditLog', 'read');
  if (RUN_RECORDS.has(dataset)) return rightsAllowDataset(p.rights, dataset, 'query', 'read');
  if (p.rights.all || canOrg(p, 'datasets', 'read')) return true;
  const nonEmpty = (e: DatasetCapabilities[string] | undefined) =>
    !!e && Object.values(e).some((a) => (a?.length ?? 0) > 0);
  return nonEmpty(own(p.rights.datasetCapabilities, '*')) || nonEmpty(own(p.rights.datasetCapabilities, dataset));
}

/** The union of several identities' rights: roles add up, none takes away (management.md §4.3). */
export function unionRights(all: Rights[]): Rights {
  // Built without prototypes: a key such as "__proto__" is an entry like any other, never Object.prototype.
  const out: Rights = {
    all: all.some((r) => r.all),
    datasetCapabilities: Object.create(null) as DatasetCapabilities,
    orgCapabilities: Object.create(null) as OrgCapabilities,
  };
  const datasets = out.datasetCapabilities as Record<string, Record<string, string[]>>;
  const orgs = out.orgCapabilities as Record<string, string[]>;
  for (const r of all) {
    for (const [ds, entry] of Object.entries(r.datasetCapabilities)) {
      const into = own(datasets, ds) ?? (datasets[ds] = Object.create(null) as Record<string, string[]>);
      for (const [cap, actions] of Object.entries(entry)) {
        const list = own(into, cap) ?? (into[cap] = []);
        for (const a of actions ?? []) if (!list.includes(a)) list.push(a);
      }
    }
    for (const [area, actions] of Object.entries(r.orgCapabilities)) {
      const list = own(orgs, area) ?? (orgs[area] = []);
      for (const a of actions ?? []) if (!list.includes(a)) list.push(a);
    }
  }
  return out;
}

/** Checks capability objects from a request; returns the first problem as a sentence, or undefined. */
export function validateCapabilities(dataset: unknown, org: unknown): string | undefined {
  if (dataset !== undefined && dataset !== null) {
    if (typeof dataset !== 'object' || Array.isArray(dataset))
      return 'datasetCapabilities must be an object keyed by dataset name or "*"';
    for (const [ds, entry] of Object.entries(dataset)) {
      if (ds !== '*' && datasetNameProblem(ds, true))
        return `datasetCapabilities.${ds}: not a dataset name or "*" (${datasetNameProblem(ds, true)})`;
      if (!entry || typeof entry !== 'object' || Array.isArray(entry))
        return `datasetCapabilities.${ds} must be an object`;
      for (const [cap, actions] of Object.entries(entry)) {
        const allowed = own(DATASET_CAPABILITIES as Record<string, readonly string[]>, cap);
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
      const allowed = own(ORG_CAPABILITIES as Record<string, readonly string[]>, area);
      if (!allowed) return `orgCapabilities.${area}: unknown area (one of ${Object.keys(ORG_CAPABILITIES).join(', ')})`;
      if (!Array.isArray(actions)) return `orgCapabilities.${area} must be an array of actions`;
      for (const a of actions)
        if (!allowed.includes(a))
          return `orgCapabilities.${area}: action "${a}" not allowed (one of ${allowed.join(', ')})`;
    }
  }
  return undefined;
}

/**
 * A token, role or group may only hand out rights its maker holds (management.md §3.3), else a holder of
 * rbac or apiTokens rights could grant itself everything. Returns the first excess, if any.
 */
export function excessRights(creator: Rights, granted: Rights): string | undefined {
  if (creator.all) return undefined;
  if (granted.all) return 'every right (the owner role)';
  for (const [ds, entry] of Object.entries(granted.datasetCapabilities)) {
    for (const [cap, actions] of Object.entries(entry)) {
      for (const a of actions ?? []) {
        const ok =
          ds === '*'
            ? hasAction(creator.datasetCapabilities['*'], cap, a)
            : rightsAllowDataset(creator, ds, cap as DatasetCapability, a as Action);
        if (!ok) return `datasetCapabilities.${ds}.${cap}: ${a}`;
      }
    }
  }
  for (const [area, actions] of Object.entries(granted.orgCapabilities)) {
    for (const a of actions ?? [])
      if (!rightsAllowOrg(creator, area as OrgArea, a as Action)) return `orgCapabilities.${area}: ${a}`;
  }
  return undefined;
}
