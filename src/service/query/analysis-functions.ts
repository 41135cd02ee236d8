/**
 * The aggregations that analyse what they gathered, in JavaScript registered with DuckDB: spotlight (a
 * selected cohort against the rest, field by field) and phrases (the most common word sequences). DuckDB
 * gathers each group's values into a list; these functions read it once. Pure functions.
 */
import { BIGINT, type DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { jsFunction } from './duckdb-function.js';

// ---- statistics

/** The standard normal distribution's CDF (Abramowitz and Stegun 7.1.26, error under 1.5e-7). */
function normalCdf(z: number): number {
  const t = 1 / (1 + (0.3275911 * Math.abs(z)) / Math.SQRT2);
  const y =
    1 -
    t *
      (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) *
      Math.exp(-(z * z) / 2);
  return z >= 0 ? (1 + y) / 2 : (1 - y) / 2;
}

/** The two-sided p-value of a z statistic. */
const twoSided = (z: number) => (Number.isFinite(z) ? 2 * (1 - normalCdf(Math.abs(z))) : 0);

const round = (x: number) => (Number.isFinite(x) ? Math.round(x * 1e6) / 1e6 : null);

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

function summary(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  const variance = s.length > 1 ? s.reduce((a, b) => a + (b - mean) ** 2, 0) / (s.length - 1) : 0;
  return {
    count: s.length,
    min: s[0] ?? null,
    p25: quantile(s, 0.25),
    median: quantile(s, 0.5),
    p75: quantile(s, 0.75),
    max: s[s.length - 1] ?? null,
    avg: s.length ? round(mean) : null,
    stdev: round(Math.sqrt(variance)),
    mean,
    variance,
  };
}

/** Fields with more distinct numbers than this are compared as distributions, fewer as categories. */
const CATEGORICAL_NUMBERS = 10;
/** The most values of one field spotlight reports. */
const VALUES_PER_FIELD = 10;

type Row = unknown[];

/**
 * spotlight: for each field, how the selected rows (the predicate true) differ from the baseline (the
 * rest). Categories (strings, booleans, numbers with few values): each value's share in both sets, the
 * difference (delta_score), the lift, Cohen's h (effect_size) and a two-proportion z-test's p_value.
 * Numbers with many values: both sets' quartiles and mean, the standardised mean difference (delta_score
 * and effect_size, Cohen's d) and a Welch z-test's p_value. Differences are ranked by |delta_score|.
 */
export function spotlight(rows: Row[], fields: string[]) {
  const selected = rows.filter((r) => r[0] === true);
  const baseline = rows.filter((r) => r[0] !== true);
  const differences: Record<string, unknown>[] = [];
  fields.forEach((field, f) => {
    const values = rows.map((r) => r[f + 1]).filter((v) => v !== null && v !== undefined);
    const numbers = values.every((v) => typeof v === 'number');
    if (numbers && new Set(values).size > CATEGORICAL_NUMBERS) {
      const a = summary(selected.map((r) => r[f + 1]).filter((v): v is number => typeof v === 'number'));
      const b = summary(baseline.map((r) => r[f + 1]).filter((v): v is number => typeof v === 'number'));
      if (a.count === 0 || b.count === 0) return;
      const pooled = Math.sqrt(
        ((a.count - 1) * a.variance + (b.count - 1) * b.variance) / Math.max(1, a.count + b.count - 2),
      );
      const d = pooled > 0 ? (a.mean - b.mean) / pooled : 0;
      const se = Math.sqrt(a.variance / a.count + b.variance / b.count);
      const { mean: _ma, variance: _va, ...sel } = a;
      const { mean: _mb, variance: _vb, ...base } = b;
      differences.push({
        field,
        kind: 'numeric',
        selected: sel,
        baseline: base,
        delta_score: round(d),
        effect_size: round(d),
        p_value: round(se > 0 ? twoSided((a.mean - b.mean) / se) : a.mean === b.mean ? 1 : 0),
      });
      return;
    }
    const key = (v: unknown) =>
      v === null || v === undefined ? 'null' : typeof v === 'string' ? v : JSON.stringify(v);
    const counts = (rs: Row[]) => {
      const m = new Map<string, number>();
      for (const r of rs) m.set(key(r[f + 1]), (m.get(key(r[f + 1])) ?? 0) + 1);
      return m;
    };
    const cs = counts(selected);
    const cb = counts(baseline);
    const entries = [...new Set([...cs.keys(), ...cb.keys()])].map((value) => {
      const ns = cs.get(value) ?? 0;
      const nb = cb.get(value) ?? 0;
      const ps = selected.length ? ns / selected.length : 0;
      const pb = baseline.length ? nb / baseline.length : 0;
      const pooled = (ns + nb) / Math.max(1, selected.length + baseline.length);
      const se = Math.sqrt(
        pooled * (1 - pooled) * (1 / Math.max(1, selected.length) + 1 / Math.max(1, baseline.length)),
      );
      return {
        field,
        kind: 'categorical',
        value,
        selected_count: ns,
        selected_proportion: round(ps),
        baseline_count: nb,
        baseline_proportion: round(pb),
        delta_score: round(ps - pb),
        lift: pb > 0 ? round(ps / pb) : null,
        effect_size: round(2 * Math.asin(Math.sqrt(ps)) - 2 * Math.asin(Math.sqrt(pb))),
        p_value: round(se > 0 ? twoSided((ps - pb) / se) : ps === pb ? 1 : 0),
      };
    });
    entries.sort((x, y) => Math.abs(y.delta_score ?? 0) - Math.abs(x.delta_score ?? 0) || (x.value < y.value ? -1 : 1));
    differences.push(...entries.slice(0, VALUES_PER_FIELD));
  });
  differences.sort(
    (x, y) =>
      Math.abs((y.delta_score as number) ?? 0) - Math.abs((x.delta_score as number) ?? 0) ||
      String(x.field).localeCompare(String(y.field)),
  );
  return { selected_count: selected.length, baseline_count: baseline.length, differences };
}

// ---- phrases

const STOP_WORDS = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were will with'.split(' '),
);

/**
 * phrases: the most common sequences of two to four words, each counted once per text, ranked by count
 * and then length; a phrase inside a longer one with the same count is left out, as the longer one says it.
 */
export function phrases(texts: string[], max: number): { phrase: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const text of texts) {
    const seen = new Set<string>();
    for (const segment of text.toLowerCase().split(/[.,;:!?|()[\]{}"\n\r\t]+/)) {
      const words = segment.match(/[\p{L}\p{N}][\p{L}\p{N}'_-]*/gu) ?? [];
      for (let n = 2; n <= 4; n++) {
        for (let i = 0; i + n <= words.length; i++) {
          const gram = words.slice(i, i + n);
          if (gram.every((w) => STOP_WORDS.has(w))) continue;
          seen.add(gram.join(' '));
        }
      }
    }
    for (const p of seen) counts.set(p, (counts.get(p) ?? 0) + 1);
  }
  const ranked = [...counts.entries()]
    .filter(([, c]) => c > 1 || texts.length === 1)
    .sort((a, b) => b[1] - a[1] || b[0].split(' ').length - a[0].split(' ').length || (a[0] < b[0] ? -1 : 1));
  const kept: { phrase: string; count: number }[] = [];
  for (const [phrase, count] of ranked) {
    if (kept.length >= max) break;
    if (kept.some((k) => k.count === count && ` ${k.phrase} `.includes(` ${phrase} `))) continue;
    kept.push({ phrase, count });
  }
  return kept;
}

export function analysisFunctions(): DuckDBScalarFunction[] {
  return [
    jsFunction<[string, string]>('ferry_spotlight', [VARCHAR, VARCHAR], VARCHAR, (rows, names) => {
      const parsed = (JSON.parse(rows) as unknown[]).map((r) => (typeof r === 'string' ? JSON.parse(r) : r)) as Row[];
      return JSON.stringify(spotlight(parsed, JSON.parse(names) as string[]));
    }),
    jsFunction<[string, bigint]>('ferry_phrases', [VARCHAR, BIGINT], VARCHAR, (texts, max) => {
      const strings = (JSON.parse(texts) as unknown[]).map((t) => (typeof t === 'string' ? t : JSON.stringify(t)));
      return JSON.stringify(phrases(strings, Number(max)));
    }),
  ];
}
