/**
 * API tokens (xaat-...). The secret is shown once, at create or regenerate; only its SHA-256 is stored.
 * A salted slow hash buys nothing here: the secrets are 122-bit random UUIDs, not passwords, and lookup by
 * hash keeps authentication O(1) per request.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ConnOps, Database } from '../store/db.js';
import type { DatasetCapabilities, OrgCapabilities } from './capabilities.js';
import type { ViewCapabilities } from './roles.js';

export interface TokenRecord {
  id: string;
  name: string;
  description: string;
  datasetCapabilities: DatasetCapabilities;
  orgCapabilities: OrgCapabilities;
  /** Stored and returned as given; Ferry has no views, so they grant nothing here. */
  viewCapabilities: ViewCapabilities;
  /** RFC 3339, or null for no expiry. */
  expiresAt: string | null;
  createdAt: string;
  createdBy: string;
}

const DDL = `CREATE TABLE IF NOT EXISTS ferry_tokens (
  id VARCHAR, name VARCHAR, description VARCHAR, hash VARCHAR, dataset_caps VARCHAR, org_caps VARCHAR,
  expires_at VARCHAR, created_at VARCHAR, created_by VARCHAR)`;
/** Tokens made before viewCapabilities were kept have none. */
const ADD_VIEW_CAPS = 'ALTER TABLE ferry_tokens ADD COLUMN IF NOT EXISTS view_caps VARCHAR';

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function isExpired(t: { expiresAt: string | null }, nowMs = Date.now()): boolean {
  return t.expiresAt !== null && Date.parse(t.expiresAt) <= nowMs;
}

export class TokenStore {
  private readonly byHash = new Map<string, TokenRecord>();
  private readonly byId = new Map<string, { record: TokenRecord; hash: string }>();

  private constructor(private readonly db: Database) {}

  static async open(db: Database): Promise<TokenStore> {
    const s = new TokenStore(db);
    await db.use((c) => s.load(c));
    // A token the database's fatal error caught may or may not have been committed: the table says.
    db.afterReopen((c) => s.load(c));
    return s;
  }

  private async load(c: ConnOps): Promise<void> {
    await c.run(DDL);
    await c.run(ADD_VIEW_CAPS);
    const rows = await c.all('SELECT * FROM ferry_tokens');
    // Swapped in at once: a request checked meanwhile sees the tokens before or after, never none.
    this.byHash.clear();
    this.byId.clear();
    for (const r of rows) {
      this.remember(
        {
          id: r.id as string,
          name: r.name as string,
          description: (r.description as string) ?? '',
          datasetCapabilities: JSON.parse(r.dataset_caps as string),
          orgCapabilities: JSON.parse(r.org_caps as string),
          viewCapabilities: r.view_caps ? JSON.parse(r.view_caps as string) : {},
          expiresAt: (r.expires_at as string | null) ?? null,
          createdAt: r.created_at as string,
          createdBy: r.created_by as string,
        },
        r.hash as string,
      );
    }
  }

  private remember(record: TokenRecord, hash: string): void {
    this.byHash.set(hash, record);
    this.byId.set(record.id, { record, hash });
  }

  /** The token a secret (by its hash) belongs to, if it exists (expired ones included: the caller decides). */
  lookup(secretHash: string): TokenRecord | undefined {
    return this.byHash.get(secretHash);
  }

  get(id: string): TokenRecord | undefined {
    return this.byId.get(id)?.record;
  }

  /** Tokens that can still be used, oldest first. */
  list(): TokenRecord[] {
    return [...this.byId.values()]
      .map((e) => e.record)
      .filter((t) => !isExpired(t))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async create(input: Omit<TokenRecord, 'id' | 'createdAt'>): Promise<{ record: TokenRecord; secret: string }> {
    const secret = `xaat-${randomUUID()}`;
    const record: TokenRecord = { ...input, id: randomUUID(), createdAt: new Date().toISOString() };
    const hash = hashSecret(secret);
    await this.db.run(
      `INSERT INTO ferry_tokens (id, name, description, hash, dataset_caps, org_caps, expires_at, created_at, created_by, view_caps)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        record.id,
        record.name,
        record.description,
        hash,
        JSON.stringify(record.datasetCapabilities),
        JSON.stringify(record.orgCapabilities),
        record.expiresAt,
        record.createdAt,
        record.createdBy,
        JSON.stringify(record.viewCapabilities),
      ],
    );
    this.remember(record, hash);
    return { record, secret };
  }

  async setExpiry(id: string, expiresAt: string | null): Promise<void> {
    const e = this.byId.get(id);
    if (!e) return;
    await this.db.run(`UPDATE ferry_tokens SET expires_at = $2 WHERE id = $1`, [id, expiresAt]);
    e.record.expiresAt = expiresAt;
  }

  async delete(id: string): Promise<boolean> {
    const e = this.byId.get(id);
    if (!e) return false;
    await this.db.run(`DELETE FROM ferry_tokens WHERE id = $1`, [id]);
    this.byId.delete(id);
    this.byHash.delete(e.hash);
    return true;
  }
}
