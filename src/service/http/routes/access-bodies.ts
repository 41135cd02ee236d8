/**
 * Reading the bodies of users, roles and groups (management.md §4.2) the way the Go server does: keys in
 * any case, unknown and read-only keys ignored; a bad field answered 400 naming it.
 */
import { validateCapabilities, type DatasetCapabilities, type OrgCapabilities } from '../../auth/capabilities.js';
import type { GroupInput, RoleInput } from '../../auth/directory.js';
import { validateViewCapabilities, type ViewCapabilities } from '../../auth/roles.js';
import { canonicalKeys, FieldError } from '../../bodies/fields.js';
import { badRequest } from '../errors.js';

export function requiredName(v: unknown, field = 'name'): string {
  if (typeof v !== 'string' || v.trim() === '') throw new FieldError(field, 'is required: a non-empty string');
  if (v.length > 256) throw new FieldError(field, 'is longer than 256 characters');
  return v.trim();
}

function optionalString(v: unknown, field: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new FieldError(field, 'must be a string');
  return v;
}

function ids(v: unknown, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw new FieldError(field, 'must be an array of ids (strings)');
  return [...new Set(v as string[])];
}

/** A role as `"id"` or `{id}` (axiom-go sends the id; responses carry {id, name}). */
export function roleId(v: unknown): string {
  if (typeof v === 'string' && v !== '') return v;
  if (v && typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string') return (v as { id: string }).id;
  throw new FieldError('role', 'is required: a role id such as "user", "read-only" or a custom role\'s id');
}

export function readRole(body: unknown): RoleInput {
  const b = canonicalKeys(
    body,
    ['name', 'description', 'members', 'datasetCapabilities', 'orgCapabilities', 'viewCapabilities'],
    {},
    'role',
  );
  const problem =
    validateCapabilities(b.datasetCapabilities, b.orgCapabilities) ?? validateViewCapabilities(b.viewCapabilities);
  if (problem) throw badRequest(problem);
  return {
    name: requiredName(b.name),
    description: optionalString(b.description, 'description'),
    members: ids(b.members, 'members'),
    datasetCapabilities: (b.datasetCapabilities as DatasetCapabilities | null) ?? {},
    orgCapabilities: (b.orgCapabilities as OrgCapabilities | null) ?? {},
    viewCapabilities: (b.viewCapabilities as ViewCapabilities | null) ?? {},
  };
}

export function readGroup(body: unknown): GroupInput {
  const b = canonicalKeys(body, ['name', 'description', 'members', 'roles'], {}, 'group');
  return {
    name: requiredName(b.name),
    description: optionalString(b.description, 'description'),
    members: ids(b.members, 'members'),
    roles: ids(b.roles, 'roles'),
  };
}

export function readUser(body: unknown): { name: string; email: string; role: string } {
  const b = canonicalKeys(body, ['name', 'email', 'role'], {}, 'user');
  const email = optionalString(b.email, 'email').trim();
  // CreateUserRequest is {name, email, role}: the email is who the user is, and unique among users.
  if (!email) throw new FieldError('email', 'is required (the address of the user)');
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new FieldError('email', `is not an email address: "${email}"`);
  return { name: requiredName(b.name), email, role: roleId(b.role) };
}
