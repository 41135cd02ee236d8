/**
 * Coverage of APL's documented reference: every operator and function of apl.md 2.1-2.4 has at least one
 * realistic query (test/support/coverage/cases.ts), run over generated datasets shaped like the docs' samples
 * (sample-http-logs, otel-demo-traces, ai-logs). Each query is put to Axiom's own parser, run against the
 * service, and its answer compared with the value computed from the generated events; a feature Ferry
 * does not run must be refused with a 400 naming it. The share of the reference answered is printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coverageCases, type Data } from '../../support/coverage/cases.js';
import { aiEvents, httpEvents, RANGE, traceEvents } from '../../support/coverage/data.js';
import { REFERENCE } from '../../support/coverage/reference.js';
import { HTTP_LOG_FIELDS, Oracle, type ColumnType } from '../../support/conformance/oracle.js';
import { startTestService, type TestService } from '../../support/helpers.js';

const data: Data = { http: httpEvents(), traces: traceEvents(), ai: aiEvents() };
const CASES = coverageCases(data);

/** Schemas as Axiom types the sample datasets, for its parser. */
const SCHEMAS: Record<string, Record<string, ColumnType>> = {
  'sample-http-logs': { _time: 'datetime', _sysTime: 'datetime', ...HTTP_LOG_FIELDS },
  'otel-demo-traces': {
    _time: 'datetime',
    _sysTime: 'datetime',
    trace_id: 'string',
    span_id: 'string',
    parent_span_id: 'string',
    name: 'string',
    kind: 'string',
    duration: 'long',
    error: 'bool',
    status_code: 'string',
    'service.name': 'string',
    events: 'dynamic',
  },
  'ai-logs': {
    _time: 'datetime',
    _sysTime: 'datetime',
    model: 'string',
    input_tokens: 'long',
    output_tokens: 'long',
    finish_reason: 'string',
    messages: 'dynamic',
  },
};

let svc: TestService;
let oracle: Oracle;

beforeAll(async () => {
  svc = await startTestService();
  oracle = new Oracle(SCHEMAS);
  const token = await svc.apiToken();
  for (const [name, events] of [
    ['sample-http-logs', data.http],
    ['otel-demo-traces', data.traces],
    ['ai-logs', data.ai],
  ] as const) {
    await svc.createDataset(name);
    const body = (events as object[]).map((e) => JSON.stringify(e)).join('\n');
    const r = await svc.call('POST', `/v1/ingest/${name}`, body, token, { 'content-type': 'application/x-ndjson' });
    expect(r.status).toBe(200);
  }
});
afterAll(async () => svc?.stop());

interface Outcome {
  status: number;
  message?: string;
  column: unknown[];
}

async function run(apl: string): Promise<Outcome> {
  const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl, ...RANGE });
  const body = (await r.json()) as { message?: string; tables?: { columns: unknown[][] }[] };
  return { status: r.status, message: body.message, column: body.tables?.[0]?.columns[0] ?? [] };
}

/** Equal, reals compared to 9 significant digits, at any depth. */
function same(got: unknown, want: unknown): boolean {
  if (typeof want === 'number') {
    return typeof got === 'number' && (got === want || Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want)));
  }
  if (Array.isArray(want))
    return Array.isArray(got) && got.length === want.length && want.every((w, i) => same(got[i], w));
  if (want !== null && typeof want === 'object') {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) return false;
    const keys = Object.keys(want);
    return (
      keys.length === Object.keys(got).length &&
      keys.every((k) => same((got as Record<string, unknown>)[k], (want as Record<string, unknown>)[k]))
    );
  }
  return got === want;
}

describe('APL reference coverage', () => {
  const verdicts = new Map<string, 'answered' | 'refused' | 'failed'>();
  const problems: string[] = [];

  it('every documented operator and function has a query here', () => {
    const covered = new Set(CASES.map((c) => c.feature));
    const all = [
      ...REFERENCE.operators,
      ...REFERENCE.aggregations,
      ...REFERENCE.functions,
      ...REFERENCE.scalarOperators,
    ];
    expect(all.filter((f) => !covered.has(f))).toEqual([]);
  });

  it("Axiom's parser accepts every query, but for the functions and operators it does not know yet", () => {
    const rejected: string[] = [];
    for (const c of CASES) {
      const errors = oracle.analyze(c.apl).errors.filter((e) => !/The function '[a-z0-9_]+' is not defined\.$/.test(e));
      if (errors.length && !c.lags) rejected.push(`${c.feature}: ${c.apl}\n    ${errors.join('; ')}`);
    }
    expect(rejected).toEqual([]);
  });

  it('runs every query: the computed answer, or a 400 naming what is not supported; never a 5xx', async () => {
    for (const c of CASES) {
      const got = await run(c.apl);
      let verdict: 'answered' | 'refused' | 'failed';
      if (c.want === 'refused') {
        const named =
          got.status === 400 && (got.message ?? '').includes(c.feature) && /not supported/.test(got.message ?? '');
        verdict = named ? 'refused' : 'failed';
        if (!named) problems.push(`${c.feature}: expected a 400 naming it, got ${got.status} ${got.message ?? ''}`);
      } else {
        const value = c.read === 'column' ? got.column : got.column[0];
        const ok = got.status === 200 && same(value, c.want);
        verdict = ok ? 'answered' : 'failed';
        if (!ok)
          problems.push(
            `${c.feature}: ${c.apl}\n    got ${got.status} ${got.message ?? JSON.stringify(value)}, want ${JSON.stringify(c.want)}`,
          );
      }
      if (got.status >= 500) problems.push(`${c.feature}: ${got.status} for ${c.apl}`);
      const before = verdicts.get(c.feature);
      // A feature is answered when every query of it is.
      verdicts.set(
        c.feature,
        before === 'failed' || verdict === 'failed' ? 'failed' : before === 'refused' ? 'refused' : verdict,
      );
    }
    const total = verdicts.size;
    const answered = [...verdicts.values()].filter((v) => v === 'answered').length;
    const refused = [...verdicts.entries()].filter(([, v]) => v === 'refused').map(([f]) => f);
    console.log(
      `APL reference coverage: ${answered} of ${total} documented operators and functions answered (${((100 * answered) / total).toFixed(1)}%); refused with a reason: ${refused.join(', ')}`,
    );
    expect(problems).toEqual([]);
    expect(answered / total).toBeGreaterThanOrEqual(0.95);
  });
});
