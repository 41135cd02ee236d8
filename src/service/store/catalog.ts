/**
 * The catalog: datasets and their fields, kept in DuckDB tables next to the events so that schema changes
 * commit atomically with the events that caused them. Uniqueness is enforced here, in the one process
 * that owns the file, rather than with DuckDB indexes (which make updates of indexed rows fragile).
 */
import type { ConnOps } from './db.js';
import type { FieldType } from './field-types.js';

export const CATALOG_DDL = [
  `CREATE TABLE IF NOT EXISTS ferry_meta (key VARCHAR, value VARCHAR)`,
  `CREATE TABLE IF NOT EXISTS ferry_datasets (
     name VARCHAR, tbl VARCHAR, description VARCHAR, kind VARCHAR, who VARCHAR,
     created VARCHAR, updated VARCHAR, retention_days INTEGER, use_retention BOOLEAN,
     map_fields VARCHAR, next_col INTEGER)`,
  // Catalogs made before datasets kept their edge deployment gain the column, empty.
  `ALTER TABLE ferry_datasets ADD COLUMN IF NOT EXISTS edge_deployment VARCHAR`,
  `CREATE TABLE IF NOT EXISTS ferry_fields (
     dataset VARCHAR, name VARCHAR, col VARCHAR, type VARCHAR, description VARCHAR, unit VARCHAR, hidden BOOLEAN)`,
  // The bytes of events each dataset has received (its info's inputBytes), written apart from the events'
  // inserts: batches of one dataset append side by side, and one row they all updated would conflict.
  `CREATE TABLE IF NOT EXISTS ferry_input_bytes (dataset VARCHAR, bytes BIGINT)`,
];

export interface FieldRecord {
  name: string;
  column: string;
  type: FieldType;
  description: string;
  unit: string;
  hidden: boolean;
}

export interface DatasetRecord {
  name: string;
  table: string;
  description: string;
  kind: string;
  who: string;
  created: string;
  updatedAt: string;
  retentionDays: number;
  useRetentionPeriod: boolean;
  mapFields: string[];
  nextColumn: number;
  /** Where the dataset's data is kept, as its creator named it ('' when not given). */
  edgeDeployment: string;
}

export async function loadDatasets(c: ConnOps): Promise<DatasetRecord[]> {
  const rows = await c.all(`SELECT * FROM ferry_datasets ORDER BY name`);
  return rows.map((r) => ({
    name: r.name as string,
    table: r.tbl as string,
    description: (r.description as string) ?? '',
    kind: r.kind as string,
    who: r.who as string,
    created: r.created as string,
    updatedAt: r.updated as string,
    retentionDays: Number(r.retention_days ?? 0),
    useRetentionPeriod: Boolean(r.use_retention),
    mapFields: JSON.parse((r.map_fields as string) || '[]') as string[],
    nextColumn: Number(r.next_col ?? 1),
    edgeDeployment: (r.edge_deployment as string | null) ?? '',
  }));
}

export async function loadFields(c: ConnOps, dataset: string): Promise<FieldRecord[]> {
  const rows = await c.all(`SELECT * FROM ferry_fields WHERE dataset = $1 ORDER BY name`, [dataset]);
  return rows.map((r) => ({
    name: r.name as string,
    column: r.col as string,
    type: r.type as FieldType,
    description: (r.description as string) ?? '',
    unit: (r.unit as string) ?? '',
    hidden: Boolean(r.hidden),
  }));
}

export async function insertDataset(c: ConnOps, d: DatasetRecord): Promise<void> {
  await c.run(
    `INSERT INTO ferry_datasets (name, tbl, description, kind, who, created, updated, retention_days, use_retention,
       map_fields, next_col, edge_deployment) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      d.name,
      d.table,
      d.description,
      d.kind,
      d.who,
      d.created,
      d.updatedAt,
      d.retentionDays,
      d.useRetentionPeriod,
      JSON.stringify(d.mapFields),
      d.nextColumn,
      d.edgeDeployment,
    ],
  );
}

export async function updateDataset(c: ConnOps, d: DatasetRecord): Promise<void> {
  await c.run(
    `UPDATE ferry_datasets SET description = $2, updated = $3, retention_days = $4, use_retention = $5,
       map_fields = $6, next_col = $7 WHERE name = $1`,
    [
      d.name,
      d.description,
      d.updatedAt,
      d.retentionDays,
      d.useRetentionPeriod,
      JSON.stringify(d.mapFields),
      d.nextColumn,
    ],
  );
}

export async function deleteDatasetRows(c: ConnOps, name: string): Promise<void> {
  await c.run(`DELETE FROM ferry_datasets WHERE name = $1`, [name]);
  await c.run(`DELETE FROM ferry_fields WHERE dataset = $1`, [name]);
  await c.run(`DELETE FROM ferry_input_bytes WHERE dataset = $1`, [name]);
}

export async function loadInputBytes(c: ConnOps): Promise<Map<string, number>> {
  const rows = await c.all(`SELECT dataset, bytes FROM ferry_input_bytes`);
  return new Map(rows.map((r) => [r.dataset as string, Number(r.bytes)]));
}

/** Replaces the recorded totals of these datasets, in the caller's transaction. */
export async function saveInputBytes(c: ConnOps, totals: Map<string, number>): Promise<void> {
  for (const [dataset, bytes] of totals) {
    await c.run(`DELETE FROM ferry_input_bytes WHERE dataset = $1`, [dataset]);
    await c.run(`INSERT INTO ferry_input_bytes VALUES ($1, $2)`, [dataset, bytes]);
  }
}

export async function insertField(c: ConnOps, dataset: string, f: FieldRecord): Promise<void> {
  await c.run(`INSERT INTO ferry_fields VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
    dataset,
    f.name,
    f.column,
    f.type,
    f.description,
    f.unit,
    f.hidden,
  ]);
}

export async function updateField(c: ConnOps, dataset: string, f: FieldRecord): Promise<void> {
  await c.run(
    `UPDATE ferry_fields SET type = $3, description = $4, unit = $5, hidden = $6 WHERE dataset = $1 AND name = $2`,
    [dataset, f.name, f.type, f.description, f.unit, f.hidden],
  );
}

export async function getMeta(c: ConnOps, key: string): Promise<string | undefined> {
  const rows = await c.all(`SELECT value FROM ferry_meta WHERE key = $1`, [key]);
  return rows[0]?.value as string | undefined;
}

export async function setMeta(c: ConnOps, key: string, value: string): Promise<void> {
  await c.run(`DELETE FROM ferry_meta WHERE key = $1`, [key]);
  await c.run(`INSERT INTO ferry_meta VALUES ($1, $2)`, [key, value]);
}
