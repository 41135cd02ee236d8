/**
 * Roles: the five built in (management.md §4.2, §4.3) and the shape of custom ones. Rights are additive:
 * a user holds the union of its base role and the roles of its groups; nothing denies.
 */
import {
  DATASET_CAPABILITIES,
  type DatasetCapabilities,
  ORG_CAPABILITIES,
  type OrgArea,
  type OrgCapabilities,
  type Rights,
} from './capabilities.js';
import { lookupTable } from '../../util/lookup.js';

export type ViewCapabilities = Record<string, { query?: string[]; share?: string[] }>;

export interface RoleRecord {
  id: string;
  name: string;
  description: string;
  /** Users who hold the role directly, besides their base role and their groups' roles. */
  members: string[];
  datasetCapabilities: DatasetCapabilities;
  orgCapabilities: OrgCapabilities;
  viewCapabilities: ViewCapabilities;
  builtin: boolean;
}

const every = (areas: OrgArea[]): OrgCapabilities =>
  Object.fromEntries(areas.map((a) => [a, [...ORG_CAPABILITIES[a]]])) as OrgCapabilities;

const ALL_AREAS = Object.keys(ORG_CAPABILITIES) as OrgArea[];

/** Every dataset capability but share: only the owner shares datasets by default (§4.3). */
const ALL_DATA: DatasetCapabilities = {
  '*': Object.fromEntries(
    Object.entries(DATASET_CAPABILITIES)
      .filter(([cap]) => cap !== 'share')
      .map(([cap, actions]) => [cap, [...actions]]),
  ),
};

function builtin(
  id: string,
  description: string,
  datasetCapabilities: DatasetCapabilities,
  orgCapabilities: OrgCapabilities,
): RoleRecord {
  return {
    id,
    name: id,
    description,
    members: [],
    datasetCapabilities,
    orgCapabilities,
    viewCapabilities: {},
    builtin: true,
  };
}

/**
 * What the docs say of each built-in role, made exact. "user" is the docs' "standard access": work with
 * data and with the things built on it, tokens within its own rights, and reading who is who; it does not
 * manage users, roles, datasets' lifetimes or the audit log.
 */
export const BUILTIN_ROLES: readonly RoleRecord[] = [
  builtin('owner', 'every right', { '*': { ...ALL_DATA['*'], share: ['create', 'read', 'delete'] } }, every(ALL_AREAS)),
  builtin(
    'admin',
    'every right but billing and sharing datasets',
    ALL_DATA,
    every(ALL_AREAS.filter((a) => a !== 'billing')),
  ),
  builtin(
    'user',
    'standard access: query, ingest, starred queries, monitors, notifiers, dashboards, annotations and API tokens',
    {
      '*': {
        ingest: ['create'],
        query: ['read'],
        starredQueries: ['create', 'read', 'update', 'delete'],
        virtualFields: ['create', 'read', 'update', 'delete'],
      },
    },
    {
      ...every(['annotations', 'apiTokens', 'dashboards', 'monitors', 'notifiers', 'views']),
      datasets: ['create', 'read', 'update'],
      users: ['read'],
      rbac: ['read'],
    },
  ),
  builtin(
    'read-only',
    'read data, dashboards, monitors, notifiers, users, starred queries and virtual fields',
    { '*': { query: ['read'], starredQueries: ['read'], virtualFields: ['read'] } },
    {
      annotations: ['read'],
      dashboards: ['read'],
      datasets: ['read'],
      monitors: ['read'],
      notifiers: ['read'],
      users: ['read'],
      views: ['read'],
    },
  ),
  builtin('none', 'no rights', {}, {}),
];

export const BUILTIN_ROLE_IDS = new Set(BUILTIN_ROLES.map((r) => r.id));

export function roleRights(r: RoleRecord): Rights {
  return {
    all: r.id === 'owner' && r.builtin,
    datasetCapabilities: r.datasetCapabilities,
    orgCapabilities: r.orgCapabilities,
  };
}

/** Checks a role's viewCapabilities from a request; the first problem as a sentence, or undefined. */
export function validateViewCapabilities(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) return 'viewCapabilities must be an object keyed by view name';
  const allowed = lookupTable<string[]>({ query: ['read'], share: ['create', 'read', 'delete'] });
  for (const [view, entry] of Object.entries(v as Record<string, unknown>)) {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry))
      return `viewCapabilities.${view} must be an object`;
    for (const [cap, actions] of Object.entries(entry)) {
      if (!allowed[cap]) return `viewCapabilities.${view}.${cap}: unknown capability (one of query, share)`;
      if (!Array.isArray(actions)) return `viewCapabilities.${view}.${cap} must be an array of actions`;
      for (const a of actions)
        if (!allowed[cap].includes(a))
          return `viewCapabilities.${view}.${cap}: action "${a}" not allowed (one of ${allowed[cap].join(', ')})`;
    }
  }
  return undefined;
}
