/**
 * The aggregations that analyse what they gathered, in JavaScript registered with DuckDB: spotlight (a
 * selected cohort against the rest, field by field) and phrases (the most common word sequences). DuckDB
 * gathers each group's values into a list; these functions read it once. Pure functions.
 */
import { BIGINT, type DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { jsFunction, type JsBudget } from './duckdb-function.js';

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

/** The summary of a field's numbers in one set of rows, as SQL or JavaScript computes it. */
export interface NumberSummary {
  count: number;
  min: number | null;
  p25: number | null;
  median: number | null;
  p75: number | null;
  max: number | null;
  mean: number | null;
  /** Sample variance (null or 0 for fewer than two numbers). */
  variance: number | null;
}

/**
 * What spotlight needs of one field, however it was gathered: whether its non-null values are all
 * numbers and how many distinct numbers there are (which decides numeric or categorical), both sets'
 * number summaries, and the categories with the largest differences (count in each set), at most
 * VALUES_PER_FIELD of them, ranked by |difference of shares| and then by value.
 */
export interface FieldSummary {
  name: string;
  allNumbers: boolean;
  distinctNumbers: number;
  selected: NumberSummary;
  baseline: NumberSummary;
  categories: { value: string; ns: number; nb: number }[];
}

export interface SpotlightSummary {
  selected: number;
  baseline: number;
  fields: FieldSummary[];
}

/** A category's key: a string as it is, anything else as its JSON text (null as "null"). */
const categoryKey = (v: unknown) =>
  v === null || v === undefined ? 'null' : typeof v === 'string' ? v : JSON.stringify(v);

function numberSummary(xs: number[]): NumberSummary {
  const s = summary(xs);
  return {
    count: s.count,
    min: s.min,
    p25: s.p25,
    median: s.median,
    p75: s.p75,
    max: s.max,
    mean: s.mean,
    variance: s.variance,
  };
}

/**
 * spotlight: for each field, how the selected rows (the predicate true) differ from the baseline (the
 * rest). Categories (strings, booleans, numbers with few values): each value's share in both sets, the
 * difference (delta_score), the lift, Cohen's h (effect_size) and a two-proportion z-test's p_value.
 * Numbers with many values: both sets' quartiles and mean, the standardised mean difference (delta_score
 * and effect_size, Cohen's d) and a Welch z-test's p_value. Differences are ranked by |delta_score|.
 * A summary in SQL over all rows (the compiler's plan) and summarizeSpotlight over rows in JavaScript
 * both end here.
 */
export function finishSpotlight(sum: SpotlightSummary) {
  const differences: Record<string, unknown>[] = [];
  for (const f of sum.fields) {
    if (f.allNumbers && f.distinctNumbers > CATEGORICAL_NUMBERS) {
      const a = f.selected;
      const b = f.baseline;
      if (a.count === 0 || b.count === 0) continue;
      const [ma, mb, va, vb] = [a.mean ?? 0, b.mean ?? 0, a.variance ?? 0, b.variance ?? 0];
      const pooled = Math.sqrt(((a.count - 1) * va + (b.count - 1) * vb) / Math.max(1, a.count + b.count - 2));
      const d = pooled > 0 ? (ma - mb) / pooled : 0;
      const se = Math.sqrt(va / a.count + vb / b.count);
      const shown = (x: NumberSummary) => ({
        count: x.count,
        min: x.min,
        p25: x.p25,
        median: x.median,
        p75: x.p75,
        max: x.max,
        avg: x.count ? round(x.mean ?? 0) : null,
        stdev: round(Math.sqrt(x.variance ?? 0)),
      });
      differences.push({
        field: f.name,
        kind: 'numeric',
        selected: shown(a),
        baseline: shown(b),
        delta_score: round(d),
        effect_size: round(d),
        p_value: round(se > 0 ? twoSided((ma - mb) / se) : ma === mb ? 1 : 0),
      });
      continue;
    }
    const entries = f.categories.map(({ value, ns, nb }) => {
      const ps = sum.selected ? ns / sum.selected : 0;
      const pb = sum.baseline ? nb / sum.baseline : 0;
      const pooled = (ns + nb) / Math.max(1, sum.selected + sum.baseline);
      const se = Math.sqrt(pooled * (1 - pooled) * (1 / Math.max(1, sum.selected) + 1 / Math.max(1, sum.baseline)));
      return {
        field: f.name,
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
  }
  differences.sort(
    (x, y) =>
      Math.abs((y.delta_score as number) ?? 0) - Math.abs((x.delta_score as number) ?? 0) ||
      String(x.field).localeCompare(String(y.field)),
  );
  return { selected_count: sum.selected, baseline_count: sum.baseline, differences };
}

/** The summary spotlight needs, gathered from rows in JavaScript ([selected, field1, …] each). */
export function summarizeSpotlight(rows: Row[], fields: string[]): SpotlightSummary {
  const selected = rows.filter((r) => r[0] === true);
  const baseline = rows.filter((r) => r[0] !== true);
  return {
    selected: selected.length,
    baseline: baseline.length,
    fields: fields.map((name, f) => {
      const values = rows.map((r) => r[f + 1]).filter((v) => v !== null && v !== undefined);
      const numbersOf = (rs: Row[]) => rs.map((r) => r[f + 1]).filter((v): v is number => typeof v === 'number');
      const counts = (rs: Row[]) => {
        const m = new Map<string, number>();
        for (const r of rs) m.set(categoryKey(r[f + 1]), (m.get(categoryKey(r[f + 1])) ?? 0) + 1);
        return m;
      };
      const cs = counts(selected);
      const cb = counts(baseline);
      const share = (n: number, of: number) => (of ? n / of : 0);
      const categories = [...new Set([...cs.keys(), ...cb.keys()])]
        .map((value) => ({ value, ns: cs.get(value) ?? 0, nb: cb.get(value) ?? 0 }))
        .map((c) => ({ ...c, d: Math.abs(round(share(c.ns, selected.length) - share(c.nb, baseline.length)) ?? 0) }))
        .sort((x, y) => y.d - x.d || (x.value < y.value ? -1 : 1))
        .slice(0, VALUES_PER_FIELD)
        .map(({ value, ns, nb }) => ({ value, ns, nb }));
      return {
        name,
        allNumbers: values.every((v) => typeof v === 'number'),
        distinctNumbers: new Set(values.filter((v) => typeof v === 'number')).size,
        selected: numberSummary(numbersOf(selected)),
        baseline: numberSummary(numbersOf(baseline)),
        categories,
      };
    }),
  };
}

/**
 * The summary the compiler's plan gathers in SQL: the fields without their categories, and every field's
 * categories apart ({f: field index, top: [...]}).
 */
function spotlightFromSql(json: string): SpotlightSummary {
  const s = JSON.parse(json) as Omit<SpotlightSummary, 'fields'> & {
    fields: Omit<FieldSummary, 'categories'>[];
    categories: { f: number; top: FieldSummary['categories'] }[];
  };
  const fields: FieldSummary[] = s.fields.map((f) => ({ ...f, categories: [] }));
  for (const c of s.categories) if (fields[c.f]) fields[c.f]!.categories = c.top;
  return { selected: s.selected, baseline: s.baseline, fields };
}

/** spotlight over rows in JavaScript (a group's rows gathered into a list). */
export function spotlight(rows: Row[], fields: string[]) {
  return finishSpotlight(summarizeSpotlight(rows, fields));
}

// ---- phrases

const STOP_WORDS = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were will with'.split(' '),
);

/** The distinct sequences of two to four words of a text (not made of stop words alone). */
export function phraseGrams(text: string): string[] {
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
  return [...seen];
}

/**
 * Candidates a phrases() result is chosen from: each phrase kept drops at most the five shorter phrases
 * inside it (a four-word phrase holds two of three words and three of two), so the first 6 × max of
 * the ranking hold every phrase the choice keeps.
 */
export const PHRASE_CANDIDATES_PER_RESULT = 6;

/**
 * The choice among phrases ranked by count, then length, then text: a phrase counted in one text only
 * is left out (unless there is one text), and so is a phrase inside a longer one with the same count,
 * as the longer one says it.
 */
export function pickPhrases(
  ranked: { phrase: string; count: number }[],
  max: number,
  texts: number,
): { phrase: string; count: number }[] {
  const kept: { phrase: string; count: number }[] = [];
  // Every shorter phrase inside a kept one, with its count: a candidate is looked up, not compared with each kept one.
  const inside = new Set<string>();
  for (const { phrase, count } of ranked) {
    if (kept.length >= max) break;
    if (count <= 1 && texts !== 1) continue;
    if (inside.has(`${count} ${phrase}`)) continue;
    kept.push({ phrase, count });
    const words = phrase.split(' ');
    for (let from = 0; from < words.length; from++)
      for (let to = from + 2; to <= words.length; to++)
        if (to - from < words.length) inside.add(`${count} ${words.slice(from, to).join(' ')}`);
  }
  return kept;
}

const words = (p: string) => p.split(' ').length;

/** phrases over texts in JavaScript: the most common sequences of two to four words, each counted once per text. */
export function phrases(texts: string[], max: number): { phrase: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const text of texts) for (const p of phraseGrams(text)) counts.set(p, (counts.get(p) ?? 0) + 1);
  const ranked = [...counts.entries()]
    .map(([phrase, count]) => ({ phrase, count }))
    .sort((a, b) => b.count - a.count || words(b.phrase) - words(a.phrase) || (a.phrase < b.phrase ? -1 : 1));
  return pickPhrases(ranked, max, texts.length);
}

/**
 * The functions a query calls. phrases and spotlight in a summarize are planned in SQL (the compiler's
 * side aggregates): DuckDB counts the words and categories of every row, and JavaScript sees each row's
 * text once (ferry_phrase_grams, a chunk at a time) and each group's short list of candidates
 * (ferry_phrases_pick, ferry_spotlight_finish). ferry_phrases and ferry_spotlight read a whole group's
 * values at once, within the budget, where a plan in SQL is not made (make-series).
 */
export function analysisFunctions(budget: JsBudget): DuckDBScalarFunction[] {
  return [
    jsFunction<[string, string]>(
      'ferry_spotlight',
      [VARCHAR, VARCHAR],
      VARCHAR,
      (rows, names) => {
        const parsed = (JSON.parse(rows) as unknown[]).map((r) => (typeof r === 'string' ? JSON.parse(r) : r)) as Row[];
        return JSON.stringify(spotlight(parsed, JSON.parse(names) as string[]));
      },
      budget,
      'spotlight',
    ),
    jsFunction<[string]>(
      'ferry_spotlight_finish',
      [VARCHAR],
      VARCHAR,
      (summaryJson) => JSON.stringify(finishSpotlight(spotlightFromSql(summaryJson))),
      budget,
      'spotlight',
    ),
    jsFunction<[string, bigint]>(
      'ferry_phrases',
      [VARCHAR, BIGINT],
      VARCHAR,
      (texts, max) => {
        const strings = (JSON.parse(texts) as unknown[]).map((t) => (typeof t === 'string' ? t : JSON.stringify(t)));
        return JSON.stringify(phrases(strings, Number(max)));
      },
      budget,
      'phrases',
    ),
    jsFunction<[string]>(
      'ferry_phrase_grams',
      [VARCHAR],
      VARCHAR,
      (text) => JSON.stringify(phraseGrams(text)),
      budget,
      'phrases',
    ),
    jsFunction<[string, bigint, bigint]>(
      'ferry_phrases_pick',
      [VARCHAR, BIGINT, BIGINT],
      VARCHAR,
      (ranked, max, texts) =>
        JSON.stringify(
          pickPhrases(JSON.parse(ranked) as { phrase: string; count: number }[], Number(max), Number(texts)),
        ),
      budget,
      'phrases',
    ),
  ];
}
