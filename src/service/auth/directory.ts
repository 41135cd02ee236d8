/**
 * Who is who: users, custom roles, groups and users' personal access tokens (xapt-…), each a document
 * table (in memory, written through to DuckDB). A PAT's secret is shown once; only its SHA-256 is stored (see token-store.ts).
 * Changes run one at a time, each checking the state it changes, so two requests racing to take one name
 * cannot both succeed.
 */
import { randomUUID } from 'node:crypto';
import { Mutex, type Database } from '../store/db.js';
import { DocumentTable } from '../store/documents.js';
import { conflict, invalid, notFound } from '../store/errors.js';
import { type Rights, unionRights } from './capabilities.js';
import { BUILTIN_ROLES, type RoleRecord, roleRights } from './roles.js';
import { hashSecret, isExpired } from './token-store.js';

export interface UserRecord {
  id: string;
  name: string;
  email: string;
  /** The base role: a built-in role's id or a custom role's. */
  role: string;
  createdAt: string;
}

export interface GroupRecord {
  id: string;
  name: string;
  description: string;
  members: string[];
  roles: string[];
}

export interface PatRecord {
  id: string;
  userId: string;
  name: string;
  createdAt: string;
  expiresAt: string | null;
}

export type RoleInput = Pick<
  RoleRecord,
  'name' | 'description' | 'members' | 'datasetCapabilities' | 'orgCapabilities' | 'viewCapabilities'
>;
export type GroupInput = Omit<GroupRecord, 'id'>;

/** The user created at first start; the admin token (FERRY_ADMIN_TOKEN or <data-dir>/admin-token) is its PAT. */
export const OWNER_ID = 'owner';

type StoredPat = PatRecord & { hash: string };
type StoredRole = Omit<RoleRecord, 'builtin'>;

export class Directory {
  private readonly patByHash = new Map<string, StoredPat>();
  /** Changes that check one table against another (a group's members are users) run one at a time. */
  private readonly writes = new Mutex();

  private constructor(
    private readonly usersTable: DocumentTable<UserRecord>,
    private readonly rolesTable: DocumentTable<StoredRole>,
    private readonly groupsTable: DocumentTable<GroupRecord>,
    private readonly patsTable: DocumentTable<StoredPat>,
  ) {
    this.indexPats();
  }

  private indexPats(): void {
    this.patByHash.clear();
    for (const p of this.patsTable.list()) this.patByHash.set(p.hash, p);
  }

  static async open(db: Database): Promise<Directory> {
    const d = new Directory(
      await DocumentTable.open<UserRecord>(db, 'ferry_users'),
      await DocumentTable.open<StoredRole>(db, 'ferry_roles'),
      await DocumentTable.open<GroupRecord>(db, 'ferry_groups'),
      await DocumentTable.open<StoredPat>(db, 'ferry_pats'),
    );
    // After the tables' own (hooks run in the order they were added).
    db.afterReopen(async () => d.indexPats());
    if (!d.usersTable.has(OWNER_ID)) {
      await d.usersTable.put({
        id: OWNER_ID,
        name: 'Owner',
        email: '',
        role: 'owner',
        createdAt: new Date().toISOString(),
      });
    }
    return d;
  }

  // ---- reading ------------------------------------------------------------------------------------------

  users(): UserRecord[] {
    return this.usersTable.list().sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  user(id: string): UserRecord | undefined {
    return this.usersTable.get(id);
  }

  /** Built-in roles first, then custom ones by name. */
  roles(): RoleRecord[] {
    const custom = this.rolesTable
      .list()
      .map((r) => ({ ...r, builtin: false }))
      .sort((a, b) => a.name.localeCompare(b.name));
    return [...BUILTIN_ROLES, ...custom];
  }

  role(id: string): RoleRecord | undefined {
    const custom = this.rolesTable.get(id);
    return custom ? { ...custom, builtin: false } : BUILTIN_ROLES.find((r) => r.id === id);
  }

  groups(): GroupRecord[] {
    return this.groupsTable.list().sort((a, b) => a.name.localeCompare(b.name));
  }

  group(id: string): GroupRecord | undefined {
    return this.groupsTable.get(id);
  }

  /** A user's tokens that can still be used, oldest first. */
  patsOf(userId: string): PatRecord[] {
    return this.patsTable
      .list()
      .filter((p) => p.userId === userId && !isExpired(p))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map(({ hash: _hash, ...p }) => p);
  }

  /** The user a PAT's secret (by its hash) belongs to, while both exist and the PAT has not expired. */
  lookupPat(secretHash: string): UserRecord | undefined {
    const pat = this.patByHash.get(secretHash);
    if (!pat || isExpired(pat)) return undefined;
    return this.usersTable.get(pat.userId);
  }

  /** The roles a user holds: its base role, roles naming it a member, and its groups' roles. */
  rolesOf(userId: string): RoleRecord[] {
    const user = this.usersTable.get(userId);
    if (!user) return [];
    const ids = new Set([user.role]);
    for (const r of this.rolesTable.list()) if (r.members.includes(userId)) ids.add(r.id);
    for (const g of this.groupsTable.list()) if (g.members.includes(userId)) for (const r of g.roles) ids.add(r);
    return [...ids].map((id) => this.role(id)).filter((r): r is RoleRecord => r !== undefined);
  }

  /** Effective rights, computed afresh on each request: a role or group change applies at once. */
  rightsOf(userId: string): Rights {
    return unionRights(this.rolesOf(userId).map(roleRights));
  }

  // ---- changing -----------------------------------------------------------------------------------------

  private checkUsers(ids: string[], what: string): void {
    for (const id of ids) if (!this.usersTable.has(id)) throw invalid(`${what}: no user "${id}"`);
  }

  private checkRole(id: string, what: string): void {
    if (!this.role(id)) throw invalid(`${what}: no role "${id}"`);
  }

  private checkRoleName(name: string, except?: string): void {
    if (this.roles().some((r) => r.id !== except && r.name.toLowerCase() === name.toLowerCase()))
      throw conflict(`a role named "${name}" already exists`);
  }

  createUser(input: { name: string; email: string; role: string }): Promise<UserRecord> {
    return this.writes.run(async () => {
      this.checkRole(input.role, 'role');
      const email = input.email.toLowerCase();
      if (email && this.users().some((u) => u.email.toLowerCase() === email))
        throw conflict(`a user with email "${input.email}" already exists`);
      return this.usersTable.put({ id: randomUUID(), ...input, createdAt: new Date().toISOString() });
    });
  }

  updateUser(id: string, change: Partial<Pick<UserRecord, 'name' | 'role'>>): Promise<UserRecord> {
    return this.writes.run(async () => {
      const user = this.usersTable.get(id);
      if (!user) throw notFound(`user "${id}"`);
      if (change.role !== undefined) {
        this.checkRole(change.role, 'role');
        if (id === OWNER_ID && change.role !== 'owner')
          throw invalid('the owner created at first start keeps the owner role (its token is the admin token)');
      }
      return this.usersTable.put({ ...user, ...change });
    });
  }

  /** Removes a user, its PATs, and its place in roles and groups. */
  removeUser(id: string): Promise<void> {
    return this.writes.run(async () => {
      if (!this.usersTable.has(id)) throw notFound(`user "${id}"`);
      if (id === OWNER_ID)
        throw invalid('the owner created at first start cannot be removed (its token is the admin token)');
      // The PATs go first: from then on the user can do nothing, whatever else is left to undo.
      for (const p of this.patsTable.list().filter((p) => p.userId === id)) await this.dropPat(p);
      for (const r of this.rolesTable.list())
        if (r.members.includes(id)) await this.rolesTable.put({ ...r, members: without(r.members, id) });
      for (const g of this.groupsTable.list())
        if (g.members.includes(id)) await this.groupsTable.put({ ...g, members: without(g.members, id) });
      await this.usersTable.delete(id);
    });
  }

  createRole(input: RoleInput): Promise<RoleRecord> {
    return this.writes.run(async () => {
      this.checkRoleName(input.name);
      this.checkUsers(input.members, 'members');
      const role = await this.rolesTable.put({ id: randomUUID(), ...input });
      return { ...role, builtin: false };
    });
  }

  updateRole(id: string, input: RoleInput): Promise<RoleRecord> {
    return this.writes.run(async () => {
      const role = this.role(id);
      if (!role) throw notFound(`role "${id}"`);
      if (role.builtin) throw invalid(`the built-in role "${id}" cannot be changed`);
      this.checkRoleName(input.name, id);
      this.checkUsers(input.members, 'members');
      return { ...(await this.rolesTable.put({ id, ...input })), builtin: false };
    });
  }

  /** Deletes a custom role; it is refused while it is some user's base role. */
  deleteRole(id: string): Promise<void> {
    return this.writes.run(async () => {
      const role = this.role(id);
      if (!role) throw notFound(`role "${id}"`);
      if (role.builtin) throw invalid(`the built-in role "${id}" cannot be deleted`);
      const holders = this.users().filter((u) => u.role === id);
      if (holders.length > 0)
        throw conflict(
          `role "${role.name}" is the base role of ${holders.map((u) => u.name).join(', ')}; give them another role first`,
        );
      for (const g of this.groupsTable.list())
        if (g.roles.includes(id)) await this.groupsTable.put({ ...g, roles: without(g.roles, id) });
      await this.rolesTable.delete(id);
    });
  }

  private checkGroup(input: GroupInput, except?: string): void {
    if (this.groupsTable.list().some((g) => g.id !== except && g.name.toLowerCase() === input.name.toLowerCase()))
      throw conflict(`a group named "${input.name}" already exists`);
    this.checkUsers(input.members, 'members');
    for (const r of input.roles) this.checkRole(r, 'roles');
  }

  createGroup(input: GroupInput): Promise<GroupRecord> {
    return this.writes.run(async () => {
      this.checkGroup(input);
      return this.groupsTable.put({ id: randomUUID(), ...input });
    });
  }

  updateGroup(id: string, input: GroupInput): Promise<GroupRecord> {
    return this.writes.run(async () => {
      if (!this.groupsTable.has(id)) throw notFound(`group "${id}"`);
      this.checkGroup(input, id);
      return this.groupsTable.put({ id, ...input });
    });
  }

  deleteGroup(id: string): Promise<void> {
    return this.writes.run(async () => {
      if (!(await this.groupsTable.delete(id))) throw notFound(`group "${id}"`);
    });
  }

  issuePat(userId: string, name: string, expiresAt: string | null): Promise<{ record: PatRecord; secret: string }> {
    return this.writes.run(async () => {
      if (!this.usersTable.has(userId)) throw notFound(`user "${userId}"`);
      const secret = `xapt-${randomUUID()}`;
      const record: PatRecord = { id: randomUUID(), userId, name, createdAt: new Date().toISOString(), expiresAt };
      const stored = await this.patsTable.put({ ...record, hash: hashSecret(secret) });
      this.patByHash.set(stored.hash, stored);
      return { record, secret };
    });
  }

  revokePat(userId: string, patId: string): Promise<void> {
    return this.writes.run(async () => {
      const pat = this.patsTable.get(patId);
      if (!pat || pat.userId !== userId) throw notFound(`personal access token "${patId}" of user "${userId}"`);
      await this.dropPat(pat);
    });
  }

  private async dropPat(pat: StoredPat): Promise<void> {
    // Out of the lookup first: the token stops working before the write, not after.
    this.patByHash.delete(pat.hash);
    await this.patsTable.delete(pat.id);
  }
}

const without = (list: string[], id: string) => list.filter((x) => x !== id);
