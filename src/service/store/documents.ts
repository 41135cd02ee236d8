/**
 * A table of JSON documents keyed by id, held in memory and written through to DuckDB: the management
 * objects (monitors, notifiers, annotations, alert state) are few and read on every request or tick, so
 * reads come from memory and each change is one statement.
 */
import type { ConnOps, Database } from './db.js';

export class DocumentTable<T extends { id: string }> {
  private readonly docs = new Map<string, T>();
  /** The last write queued: each write waits for it (see write()). */
  private tail: Promise<void> = Promise.resolve();

  private constructor(
    private readonly db: Database,
    private readonly table: string,
  ) {}

  static async open<T extends { id: string }>(db: Database, table: string): Promise<DocumentTable<T>> {
    const t = new DocumentTable<T>(db, table);
    await db.use((c) => t.load(c));
    // A write the database's fatal error caught may or may not have been committed: the table says.
    db.afterReopen((c) => t.load(c));
    return t;
  }

  private async load(c: ConnOps): Promise<void> {
    await c.run(`CREATE TABLE IF NOT EXISTS ${this.table} (id VARCHAR PRIMARY KEY, doc VARCHAR)`);
    const rows = await c.all(`SELECT id, doc FROM ${this.table}`);
    // Swapped in at once: a reader meanwhile sees the documents before or after, never none.
    this.docs.clear();
    for (const r of rows) this.docs.set(r.id as string, JSON.parse(r.doc as string) as T);
  }

  get(id: string): T | undefined {
    return this.docs.get(id);
  }

  has(id: string): boolean {
    return this.docs.has(id);
  }

  list(): T[] {
    return [...this.docs.values()];
  }

  get size(): number {
    return this.docs.size;
  }

  /** Stores the document (replacing one with its id); in memory only once it is written. */
  put(doc: T): Promise<T> {
    return this.write(async () => {
      await this.save([doc]);
      return doc;
    });
  }

  /**
   * Changes the document as it is when the write's turn comes; undefined when it was deleted meanwhile, so
   * that an update racing a delete never brings the document back, nor undoes another update.
   */
  update(id: string, change: (current: T) => T): Promise<T | undefined> {
    return this.write(async () => {
      const current = this.docs.get(id);
      if (!current) return undefined;
      const doc = change(current);
      await this.save([doc]);
      return doc;
    });
  }

  /**
   * Many documents at once (a batch of monitors claiming a tick), each as its change makes it from the
   * document as it is when the write's turn comes (undefined if there is none); a change answering
   * undefined leaves it. Answers the ids written.
   */
  writeMany(changes: Map<string, (current: T | undefined) => T | undefined>): Promise<Set<string>> {
    return this.write(async () => {
      const docs: T[] = [];
      for (const [id, change] of changes) {
        const doc = change(this.docs.get(id));
        if (doc) docs.push(doc);
      }
      await this.save(docs);
      return new Set(docs.map((d) => d.id));
    });
  }

  delete(id: string): Promise<boolean> {
    return this.write(async () => {
      if (!this.docs.has(id)) return false;
      await this.db.run(`DELETE FROM ${this.table} WHERE id = $1`, [id]);
      this.docs.delete(id);
      return true;
    });
  }

  /**
   * Writes to one table run one at a time, in call order: DuckDB refuses two transactions replacing the
   * same key at once ("duplicate key"), and the last call must be the one that stays.
   */
  private write<R>(op: () => Promise<R>): Promise<R> {
    const done = this.tail.then(op);
    this.tail = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  /** Writes documents, 500 to a statement, each in memory once its statement is written. */
  private async save(docs: T[]): Promise<void> {
    for (let i = 0; i < docs.length; i += 500) {
      const chunk = docs.slice(i, i + 500);
      await this.db.run(
        `INSERT OR REPLACE INTO ${this.table} VALUES ${chunk.map((_, j) => `($${2 * j + 1}, $${2 * j + 2})`).join(', ')}`,
        chunk.flatMap((d) => [d.id, JSON.stringify(d)]),
      );
      for (const d of chunk) this.docs.set(d.id, d);
    }
  }
}
