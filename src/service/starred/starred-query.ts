/**
 * Starred (saved) APL queries (management.md §5): the stored shape and the reading of a request body.
 * Pure; the routes store them in a document table.
 */
import { canonicalKeys, FieldError } from '../bodies/fields.js';

export interface AplRequest {
  apl: string;
  startTime?: string;
  endTime?: string;
  cursor?: string;
  includeCursor?: boolean;
  includeCursorField?: boolean;
  defaultLimit?: number;
  defaultOrder?: { field: string; desc: boolean }[] | null;
  libraries?: string[] | null;
  variables?: Record<string, unknown>;
  queryOptions?: Record<string, unknown>;
}

export interface StarredQuery {
  id: string;
  kind: 'apl';
  name: string;
  /** The id of the user (or API token) that saved it: set by the server from the caller. */
  who: string;
  query: AplRequest;
  metadata: Record<string, unknown>;
  dataset?: string;
  createdAt: string;
  /**
   * The datasets its query read when it was saved, as the saver could query them: who may see it (the
   * text of a query says what it looks for). "*" for a query that did not bind. Not shown; absent for one
   * saved before this was kept.
   */
  reads?: string[];
}

export type StarredInput = Pick<StarredQuery, 'name' | 'query' | 'metadata' | 'dataset'>;

const QUERY_KEYS = [
  'apl',
  'startTime',
  'endTime',
  'cursor',
  'includeCursor',
  'includeCursorField',
  'defaultLimit',
  'defaultOrder',
  'libraries',
  'variables',
  'queryOptions',
] as const;

const TYPES: Record<(typeof QUERY_KEYS)[number], string> = {
  apl: 'string',
  startTime: 'string',
  endTime: 'string',
  cursor: 'string',
  includeCursor: 'boolean',
  includeCursorField: 'boolean',
  defaultLimit: 'number',
  defaultOrder: 'array',
  libraries: 'array',
  variables: 'object',
  queryOptions: 'object',
};

function readQuery(v: unknown): AplRequest {
  const q = canonicalKeys(v, QUERY_KEYS, {}, 'APL request');
  const out: Record<string, unknown> = {};
  for (const key of QUERY_KEYS) {
    const value = q[key];
    if (value === undefined || value === null) continue;
    const type = Array.isArray(value) ? 'array' : typeof value;
    if (type !== TYPES[key]) throw new FieldError(`query.${key}`, `must be a ${TYPES[key]}`);
    out[key] = value;
  }
  if (typeof out.apl !== 'string' || out.apl.trim() === '')
    throw new FieldError('query.apl', 'is required: the APL text');
  return out as unknown as AplRequest;
}

/** A create or update body; `who` and `id` are the server's and ignored. */
export function readStarredBody(body: unknown): StarredInput {
  const b = canonicalKeys(body, ['kind', 'name', 'query', 'metadata', 'dataset'], {}, 'starred query');
  if (b.kind !== undefined && b.kind !== 'apl')
    throw new FieldError('kind', `must be "apl", not ${JSON.stringify(b.kind)}`);
  if (typeof b.name !== 'string' || b.name.trim() === '') throw new FieldError('name', 'is required');
  if (b.query === undefined) throw new FieldError('query', 'is required: {apl, startTime?, endTime?, …}');
  // Any JSON object (the spec's metadata: object): clients keep their own settings in it.
  const metadata = b.metadata ?? {};
  if (typeof metadata !== 'object' || Array.isArray(metadata)) throw new FieldError('metadata', 'must be an object');
  // Stored and sent back through JSON.stringify, which recurses: the nesting is bounded.
  if (depthOf(metadata, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH)
    throw new FieldError('metadata', `nests deeper than ${MAX_METADATA_DEPTH} levels`);
  if (b.dataset !== undefined && b.dataset !== null && (typeof b.dataset !== 'string' || b.dataset === ''))
    throw new FieldError('dataset', 'must be a dataset name');
  return {
    name: b.name.trim(),
    query: readQuery(b.query),
    metadata: metadata as Record<string, unknown>,
    ...(typeof b.dataset === 'string' ? { dataset: b.dataset } : {}),
  };
}

export function starredView(s: StarredQuery) {
  return {
    id: s.id,
    kind: s.kind,
    name: s.name,
    who: s.who,
    query: { defaultOrder: null, libraries: null, queryOptions: {}, ...s.query },
    metadata: s.metadata,
    ...(s.dataset !== undefined ? { dataset: s.dataset } : {}),
  };
}

/** How deep a starred query's metadata may nest. */
export const MAX_METADATA_DEPTH = 32;

/** The nesting of a JSON value, counted without recursion and no further than `max` + 1. */
function depthOf(value: unknown, max: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > deepest) deepest = d;
    if (deepest > max) return deepest;
    for (const x of Object.values(v)) stack.push([x, d + 1]);
  }
  return deepest;
}
