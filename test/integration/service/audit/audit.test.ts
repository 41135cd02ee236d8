/** The audit trail: management changes and refusals in axiom-audit, read with APL by auditLog:read only. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderMetrics } from '../../../../src/agent/metrics.js';
import { ADMIN, startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc.stop());

type Row = Record<string, unknown>;
async function trail(apl: string, token = ADMIN): Promise<{ status: number; rows: Row[] }> {
  const r = await svc.call('POST', '/v1/query/_apl?format=tabular', { apl: `['axiom-audit'] ${apl}` }, token);
  if (r.status !== 200) return { status: r.status, rows: [] };
  const t = ((await r.json()) as { tables: { fields: { name: string }[]; columns: unknown[][] }[] }).tables[0]!;
  return {
    status: 200,
    rows: (t.columns[0] ?? []).map((_, i) => Object.fromEntries(t.fields.map((f, j) => [f.name, t.columns[j]![i]]))),
  };
}

/** Waits for records to be written (the trail is written in batches). */
async function until(apl: string, n: number): Promise<Row[]> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await trail(apl);
    if (rows.length >= n) return rows;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`fewer than ${n} audit records for ${apl}`);
}

describe('audit trail', () => {
  it('exists from the start: a fresh service answers an empty trail to auditLog:read, and 403 without it', async () => {
    // A service of its own: the one below records what this test does.
    const fresh = await startTestService();
    try {
      const auditor = await fresh.apiToken({}, { auditLog: ['read'] });
      const plain = await fresh.apiToken({ '*': { query: ['read'] } });
      const query = (apl: string, token: string) => fresh.call('POST', '/v1/query/_apl?format=tabular', { apl }, token);
      const r = await query("['axiom-audit'] | count", auditor);
      const body = (await r.json()) as { tables: { columns: unknown[][] }[] };
      expect(r.status, JSON.stringify(body)).toBe(200);
      expect(body.tables[0]!.columns).toEqual([[0]]);
      expect((await query("['axiom-audit']", plain)).status).toBe(403);
    } finally {
      await fresh.stop();
    }
  });

  it('records who changed what and how it ended, refusals included, and never a secret', async () => {
    const made = await svc.call('POST', '/v2/users', { name: 'Eve', email: 'eve@example.com', role: 'none' });
    const eve = ((await made.json()) as { id: string }).id;
    const pat = ((await (await svc.call('POST', `/v2/users/${eve}/tokens`, {})).json()) as { token: string }).token;
    const api = ((await (await svc.call('POST', '/v2/tokens', { name: 'ci' })).json()) as { token: string }).token;
    expect((await svc.call('POST', '/v2/rbac/roles', { name: 'mine' }, pat)).status).toBe(403);
    expect((await svc.call('GET', '/v2/users', undefined, 'xaat-not-a-token')).status).toBe(401);
    expect((await svc.call('POST', '/v2/rbac/roles', { name: '' })).status).toBe(400);
    expect((await svc.call('GET', '/v2/users')).status).toBe(200);

    const rows = await until('| sort by _time asc | project-away _sysTime', 6);
    const strip = (r: Row) => ({ ...r, _time: undefined });
    expect(rows.map(strip)).toEqual([
      {
        _time: undefined,
        'identity.kind': 'user',
        'identity.id': 'owner',
        'identity.name': 'Owner',
        action: 'POST /v2/users',
        target: '/v2/users',
        outcome: 'ok',
        status: 200,
        message: null,
      },
      expect.objectContaining({
        action: 'POST /v2/users/:id/tokens',
        target: `/v2/users/${eve}/tokens`,
        outcome: 'ok',
      }),
      expect.objectContaining({ action: 'POST /v2/tokens', outcome: 'ok' }),
      expect.objectContaining({
        'identity.kind': 'user',
        'identity.id': eve,
        action: 'POST /v2/rbac/roles',
        outcome: 'refused',
        status: 403,
        message: 'Forbidden: this token lacks the rbac|create capability',
      }),
      expect.objectContaining({
        'identity.kind': 'anonymous',
        action: 'GET /v2/users',
        outcome: 'refused',
        status: 401,
      }),
      expect.objectContaining({ action: 'POST /v2/rbac/roles', outcome: 'failed', status: 400 }),
    ]);
    // Reads that succeed are not changes; secrets never appear.
    const text = JSON.stringify(await trail(''));
    for (const secret of [pat, api, 'xaat-not-a-token', ADMIN]) expect(text).not.toContain(secret);
  });

  it('is read with auditLog:read only, is written by the service alone, and cannot be changed', async () => {
    await until('| take 1', 1);
    const everything = await svc.apiToken(
      { '*': { ingest: ['create'], query: ['read'], trim: ['update'] } },
      {
        datasets: ['create', 'read', 'update', 'delete'],
      },
    );
    const auditor = await svc.apiToken({}, { auditLog: ['read'] });
    expect((await trail('| count', everything)).status).toBe(403);
    expect((await trail('| count', auditor)).status).toBe(200);
    const listed = (await (await svc.call('GET', '/v2/datasets', undefined, everything)).json()) as { name: string }[];
    expect(listed.map((d) => d.name)).not.toContain('axiom-audit');
    expect((await svc.call('GET', '/v2/datasets/axiom-audit', undefined, everything)).status).toBe(403);
    const { pat: upat } = await svc.userWithPat('user');
    expect((await trail('| count', upat)).status).toBe(403);
    const { pat: apat } = await svc.userWithPat('admin');
    expect((await trail('| count', apat)).status).toBe(200);
    // Nobody writes, trims, changes or deletes it, the owner included.
    const fake = await svc.call('POST', '/v1/ingest/axiom-audit', '{"outcome":"ok"}', everything, {
      'content-type': 'application/x-ndjson',
    });
    expect(fake.status).toBe(403);
    expect((await svc.call('POST', '/v2/datasets/axiom-audit/trim', { maxDuration: '1s' }, everything)).status).toBe(
      403,
    );
    for (const [method, path, body] of [
      ['DELETE', '/v2/datasets/axiom-audit', undefined],
      ['PUT', '/v2/datasets/axiom-audit', { description: 'x' }],
      ['POST', '/v2/datasets/axiom-audit/mapfields', { name: 'm' }],
    ] as const) {
      expect((await svc.call(method, path, body)).status, `${method} ${path}`).toBe(403);
    }
    expect((await svc.call('POST', '/v2/datasets', { name: 'axiom-audit' })).status).toBe(400);
    // Only the service's own records are in it: the refused ingest left no event without a status.
    expect((await trail('| where isnull(status) | count')).rows[0]).toEqual({ count: 0 });
  });
});

describe('audit trail failures', () => {
  it('a trail that cannot be written is logged, counted in /metrics and degrades /health, naming why', async () => {
    // Audit records have more fields than this service lets a dataset hold: every batch is refused.
    const small = await startTestService({ maxFieldsPerDataset: 3 });
    try {
      expect(small.recordFailures()).toEqual([]);
      expect((await small.call('POST', '/v2/rbac/roles', { name: 'r' })).status).toBe(200);
      for (let i = 0; i < 100 && small.recordFailures().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(small.recordFailures()).toEqual([
        {
          dataset: 'axiom-audit',
          failedRecords: 1,
          lastFailure: { at: expect.any(String), error: expect.stringContaining('fields') },
        },
      ]);
      expect(renderMetrics(undefined, small)).toContain('ferry_service_records_failed_total{dataset="axiom-audit"} 1');
    } finally {
      await small.stop();
    }
  });
});
