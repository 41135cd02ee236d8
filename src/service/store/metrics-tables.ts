/**
 * The tables of a metrics dataset (kind otel:metrics:v1) beside its own: `<table>_series` (id, key, metric,
 * tags as JSON, type, temporality, unit), a row a series, and `<table>_points` (series, t in whole seconds,
 * v a double), a row a point. Made with the dataset and dropped with it; the store trims their points for
 * retention. What is written into them is service/metrics/metrics-store.ts's.
 */
export const METRICS_KIND = 'otel:metrics:v1';

export const metricsTables = (table: string) => ({ series: `${table}_series`, points: `${table}_points` });

/** The statements that make a metrics dataset's tables (when missing). */
export function metricsTablesDdl(table: string, quote: (name: string) => string): string[] {
  const t = metricsTables(table);
  return [
    `CREATE TABLE IF NOT EXISTS ${quote(t.series)} (id BIGINT, key VARCHAR, metric VARCHAR, tags JSON, type VARCHAR, temporality VARCHAR, unit VARCHAR)`,
    `CREATE TABLE IF NOT EXISTS ${quote(t.points)} (series BIGINT, t BIGINT, v DOUBLE)`,
  ];
}
