/** Alert state changes (open, closed) per monitor and group: what GET /v2/monitors/{id}/history answers. */
import type { Database } from '../store/db.js';

export interface AlertHistoryEntry {
  checkId: string;
  name: string;
  state: 'open' | 'closed';
  timestamp: string;
  /** The group's values (JSON) for monitors that notify by group; "" otherwise. */
  group: string;
}

export class AlertHistory {
  private constructor(private readonly db: Database) {}

  static async open(db: Database): Promise<AlertHistory> {
    await db.run(
      `CREATE TABLE IF NOT EXISTS ferry_alert_history (monitor_id VARCHAR, name VARCHAR, state VARCHAR, ts VARCHAR, grp VARCHAR)`,
    );
    return new AlertHistory(db);
  }

  async add(entries: AlertHistoryEntry[]): Promise<void> {
    for (const e of entries) {
      await this.db.run(`INSERT INTO ferry_alert_history VALUES ($1, $2, $3, $4, $5)`, [
        e.checkId,
        e.name,
        e.state,
        e.timestamp,
        e.group,
      ]);
    }
  }

  async list(monitorId: string, startIso: string, endIso: string): Promise<AlertHistoryEntry[]> {
    const rows = await this.db.all(
      `SELECT * FROM ferry_alert_history WHERE monitor_id = $1 AND ts >= $2 AND ts <= $3 ORDER BY ts, rowid`,
      [monitorId, startIso, endIso],
    );
    return rows.map((r) => ({
      checkId: r.monitor_id as string,
      name: r.name as string,
      state: r.state as 'open' | 'closed',
      timestamp: r.ts as string,
      group: r.grp as string,
    }));
  }

  async forget(monitorId: string): Promise<void> {
    await this.db.run(`DELETE FROM ferry_alert_history WHERE monitor_id = $1`, [monitorId]);
  }
}
