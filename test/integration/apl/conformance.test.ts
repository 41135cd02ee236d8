/**
 * Conformance with Axiom's own APL front end (@axiomhq/language-service-next): over a corpus of realistic
 * queries (test/support/conformance/corpus.ts), Ferry accepts what it accepts and names the output columns as it
 * does, except where apl.md lets the service differ; each such difference is listed in the corpus.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS } from '../../support/conformance/corpus.js';
import { HTTP_LOG_FIELDS, Oracle, type ColumnType } from '../../support/conformance/oracle.js';
import { startTestService, type TestService } from '../../support/helpers.js';

const FIELDS = HTTP_LOG_FIELDS;
/** The column order of a dataset in Ferry: _time, _sysTime, then the fields alphabetically (README). */
const SCHEMA: Record<string, ColumnType> = {
  _time: 'datetime',
  _sysTime: 'datetime',
  ...Object.fromEntries(
    Object.keys(FIELDS)
      .sort()
      .map((k) => [k, FIELDS[k]!]),
  ),
};

/** Seeded sample-http-logs events (apl.md 3.1), so every query runs against real rows. */
function sampleEvents(n: number): object[] {
  let seed = 7;
  const r = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  return Array.from({ length: n }, (_, i) => ({
    _time: new Date(Date.now() - (n - i) * 60_000).toISOString(),
    id: `user-${Math.floor(r() * 20)}`,
    status: pick(['200', '200', '201', '304', '404', '500', '502']),
    method: pick(['GET', 'GET', 'POST', 'PUT', 'HEAD']),
    uri: pick(['/api/v1/bank/warn', '/api/v1/messages/back', '/api/v2/textdata/cnfigs', '/static/app.js']),
    req_duration_ms: Math.round(r() * 5000) / 1000,
    resp_body_size_bytes: 1000 + Math.floor(r() * 4000),
    resp_header_size_bytes: 20 + Math.floor(r() * 70),
    content_type: pick(['text/html', 'application/json', 'image/jpeg']),
    geo: {
      city: pick(['Paris', 'Seattle', 'Okayama', 'Camaquã']),
      country: pick(['France', 'United States', 'Japan', 'Brazil']),
    },
    is_tls: r() < 0.5,
    server_datacenter: pick(['DCA', 'GRU', 'FRA']),
    user_agent: pick([
      'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      'Mozilla/5.0 Chrome/131.0.0.0 Safari/537.36',
    ]),
    ...(i % 5 === 0 ? { message: 'QCD permutations were not solvable in linear time' } : {}),
  }));
}

let svc: TestService;
let oracle: Oracle;

beforeAll(async () => {
  oracle = new Oracle({ 'sample-http-logs': SCHEMA });
  svc = await startTestService();
  await svc.createDataset('sample-http-logs');
  const token = await svc.apiToken();
  const r = await svc.call(
    'POST',
    '/v1/ingest/sample-http-logs',
    sampleEvents(200)
      .map((e) => JSON.stringify(e))
      .join('\n'),
    token,
    { 'content-type': 'application/x-ndjson' },
  );
  expect(r.status).toBe(200);
});
afterAll(async () => svc?.stop());

async function ferry(apl: string): Promise<{ status: number; columns: string[]; message?: string }> {
  const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl });
  const body = (await r.json()) as { message?: string; tables?: { fields: { name: string }[] }[] };
  return { status: r.status, columns: body.tables?.[0]?.fields.map((f) => f.name) ?? [], message: body.message };
}

describe('APL conformance with @axiomhq/language-service-next', () => {
  it('the corpus covers every verdict', () => {
    const kinds = new Set(CORPUS.map((c) => c.expect));
    expect([...kinds].sort()).toEqual(['accept', 'lags', 'names', 'pending', 'reject']);
  });

  for (const entry of CORPUS) {
    it(`${entry.expect}: ${entry.apl.replace(/\s+/g, ' ').slice(0, 110)}`, async () => {
      const ls = oracle.analyze(entry.apl);
      const ours = await ferry(entry.apl);
      switch (entry.expect) {
        case 'accept':
          expect(ls.errors).toEqual([]);
          expect({ status: ours.status, message: ours.message }).toEqual({ status: 200, message: undefined });
          expect(ours.columns).toEqual(ls.columns);
          break;
        case 'names':
          expect(ls.errors).toEqual([]);
          expect(ours.status).toBe(200);
          expect(ours.columns).not.toEqual(ls.columns);
          expect(ours.columns).toEqual(entry.columns);
          break;
        case 'reject':
          expect(ls.errors.length).toBeGreaterThan(0);
          expect(ours.status).toBe(400);
          expect(ours.message).toMatch(/^line \d+, column \d+: /);
          break;
        case 'lags':
          expect(ls.errors.length).toBeGreaterThan(0);
          expect(ours.status).toBe(200);
          break;
        case 'pending':
          expect(ls.errors).toEqual([]);
          expect(ours.status).toBe(400);
          expect(ours.message).toContain(entry.unsupported!);
          expect(ours.message).toMatch(/^line \d+, column \d+: /);
          break;
      }
    });
  }
});
