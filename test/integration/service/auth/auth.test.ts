import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../../../src/cli/config.js';
import { startService } from '../../../../src/service/service.js';
import { ADMIN, startTestService, tempDir, type TestService } from '../../../support/helpers.js';

let svc: TestService;
const NDJSON = { 'content-type': 'application/x-ndjson' };

beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('secure');
  await svc.createDataset('other');
});
afterAll(async () => svc.stop());

async function status(r: Promise<Response>): Promise<[number, string]> {
  const res = await r;
  const body = res.status === 204 ? {} : ((await res.json()) as { message?: string; code?: number });
  if (res.status >= 400) expect(body.code).toBe(res.status);
  return [res.status, body.message ?? ''];
}

describe('authentication', () => {
  it('answers 401 without a token, with an unknown token and with a malformed header', async () => {
    for (const auth of [undefined, 'Bearer xaat-00000000-0000-4000-8000-00000000dead', 'Basic abc']) {
      const r = await fetch(`${svc.url}/v2/datasets`, { headers: auth ? { authorization: auth } : {} });
      expect(r.status).toBe(401);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.headers.get('x-axiom-trace-id')).toMatch(/^[0-9a-f]{32}$/);
      expect(await r.json()).toMatchObject({ code: 401 });
    }
  });

  it('checks credentials before reading the body: a bad body from an anonymous caller is 401, not 400', async () => {
    const anon = (method: string, path: string, body: string, headers: Record<string, string>) =>
      fetch(`${svc.url}${path}`, { method, body, headers });
    for (const [path, body, type] of [
      ['/v2/datasets', '{"name": 12', 'application/json'],
      ['/v1/ingest/secure', '[{"a":', 'application/json'],
      ['/v1/query/_apl', 'not json', 'application/json'],
    ] as const) {
      const r = await anon('POST', path, body, { 'content-type': type });
      expect(r.status, path).toBe(401);
      expect(await r.json(), path).toEqual({ code: 401, message: 'Unauthorized: send Authorization: Bearer <token>' });
      const wrong = await anon('POST', path, body, { 'content-type': type, authorization: 'Bearer xaat-nope' });
      expect(wrong.status, path).toBe(401);
    }
  });

  it('answers 401 for an expired token', async () => {
    const past = new Date(Date.now() - 1000).toISOString();
    const token = await svc.apiToken({ secure: { ingest: ['create'] } }, {}, { expiresAt: past });
    expect((await status(svc.call('POST', '/v1/ingest/secure', '{"a":1}', token, NDJSON)))[0]).toBe(401);
  });

  it('refuses ingest with a personal access token (403, saying why)', async () => {
    const [code, message] = await status(svc.call('POST', '/v1/ingest/secure', '{"a":1}', ADMIN, NDJSON));
    expect(code).toBe(403);
    expect(message).toMatch(/personal access tokens cannot ingest/);
  });

  it('lets a token ingest only where it has the ingest capability', async () => {
    const onlySecure = await svc.apiToken({ secure: { ingest: ['create'] } });
    expect((await status(svc.call('POST', '/v1/ingest/secure', '{"a":1}', onlySecure, NDJSON)))[0]).toBe(200);
    const [code, message] = await status(svc.call('POST', '/v1/ingest/other', '{"a":1}', onlySecure, NDJSON));
    expect(code).toBe(403);
    expect(message).toMatch(/ingest\|create.*"other"/);
    const queryOnly = await svc.apiToken({ '*': { query: ['read'] } });
    expect((await status(svc.call('POST', '/v1/ingest/secure', '{"a":1}', queryOnly, NDJSON)))[0]).toBe(403);
  });

  it('requires datasets|update to PUT a dataset, and datasets|create/delete to create and delete', async () => {
    const ingestOnly = await svc.apiToken({ secure: { ingest: ['create'] } });
    expect((await status(svc.call('PUT', '/v2/datasets/secure', { description: 'x' }, ingestOnly)))[0]).toBe(403);
    expect((await status(svc.call('POST', '/v2/datasets', { name: 'nope' }, ingestOnly)))[0]).toBe(403);
    expect((await status(svc.call('DELETE', '/v2/datasets/secure', undefined, ingestOnly)))[0]).toBe(403);
    const updater = await svc.apiToken({}, { datasets: ['read', 'update'] });
    expect((await status(svc.call('PUT', '/v2/datasets/secure', { description: 'y' }, updater)))[0]).toBe(200);
  });

  it('shows a token only the datasets it has rights on', async () => {
    const onlySecure = await svc.apiToken({ secure: { ingest: ['create'] } });
    const list = (await (await svc.call('GET', '/v2/datasets', undefined, onlySecure)).json()) as { name: string }[];
    expect(list.map((d) => d.name)).toEqual(['secure']);
    expect((await status(svc.call('GET', '/v2/datasets/other', undefined, onlySecure)))[0]).toBe(403);
  });
});

describe('tokens', () => {
  it('checks query|read on every dataset a query reads, on every route, the same whether the dataset exists or not', async () => {
    await svc.call(
      'POST',
      '/v1/ingest/other',
      '{"secret":"of other"}\n',
      await svc.apiToken({ other: { ingest: ['create'] } }),
      NDJSON,
    );
    const t = await svc.apiToken({ secure: { query: ['read'] } });
    const apl = (q: string) => status(svc.call('POST', '/v1/query/_apl?format=tabular', { apl: q }, t));
    expect((await apl("['secure'] | count"))[0]).toBe(200);
    for (const q of [
      "['other']",
      "['secure'] | union ['other']",
      "['secure'] | join (['other']) on secret",
      "['no-such-dataset']",
      "union ['secure'], ['no-such-dataset']",
    ]) {
      const [code, message] = await apl(q);
      expect(code, q).toBe(403);
      expect(message, q).toMatch(
        /^Forbidden: this token lacks the query\|read capability on dataset "(other|no-such-dataset)"$/,
      );
    }
    // A pattern expands only to the datasets the token may query.
    expect((await apl("union ['*'] | count"))[0]).toBe(200);
    // The owner sees that a missing dataset is missing.
    expect((await status(svc.call('POST', '/v1/query/_apl', { apl: "['no-such-dataset']" })))[0]).toBe(404);

    const legacy = (ds: string, body: object) =>
      status(
        svc.call(
          'POST',
          `/v1/datasets/${ds}/query`,
          { startTime: '2000-01-01T00:00:00Z', endTime: '2100-01-01T00:00:00Z', ...body },
          t,
        ),
      );
    expect((await legacy('secure', {}))[0]).toBe(200);
    expect(await legacy('other', {})).toEqual([
      403,
      'Forbidden: this token lacks the query|read capability on dataset "other"',
    ]);
    expect((await legacy('no-such-dataset', {}))[0]).toBe(403);
    // A virtual field is an expression, never more query text.
    const leak = await legacy('secure', { virtualFields: [{ alias: 'v', expr: "1\n| union ['other']" }] });
    expect(leak[0]).toBe(400);
    expect(leak[1]).toMatch(/^virtualFields\[0\]\.expr: not an APL expression: /);
    const sub = (await legacy('secure', { virtualFields: [{ alias: 'v', expr: "toscalar(['other'] | count)" }] }))[0];
    expect([400, 403]).toContain(sub);
    expect((await legacy('secure', { virtualFields: [{ alias: 'v', expr: 'strlen("abc") + 1' }] }))[0]).toBe(200);
  });

  it('returns the secret once, stores it hashed, and lists and deletes tokens', async () => {
    const r = await svc.call('POST', '/v2/tokens', {
      name: 'ci',
      description: 'for CI',
      datasetCapabilities: { secure: { ingest: ['create'] } },
    });
    expect(r.status).toBe(200);
    const created = (await r.json()) as Record<string, unknown>;
    expect(created.token).toMatch(/^xaat-[0-9a-f-]{36}$/);
    expect(created).toMatchObject({
      name: 'ci',
      description: 'for CI',
      expiresAt: null,
      orgCapabilities: {},
      samlAuthenticated: false,
    });
    const got = (await (await svc.call('GET', `/v2/tokens/${created.id}`)).json()) as Record<string, unknown>;
    expect(got.token).toBeUndefined();
    const listed = (await (await svc.call('GET', '/v2/tokens')).json()) as Record<string, unknown>[];
    expect(listed.find((t) => t.id === created.id)?.token).toBeUndefined();

    // Only the hash is on disk.
    await svc.store.db.run('CHECKPOINT');
    const rows = await svc.store.db.all('SELECT hash FROM ferry_tokens WHERE id = $1', [created.id]);
    expect(rows[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(join(svc.dataDir, 'ferry.duckdb')).includes(Buffer.from(created.token as string))).toBe(false);

    expect((await svc.call('DELETE', `/v2/tokens/${created.id}`)).status).toBe(204);
    expect((await status(svc.call('GET', `/v2/tokens/${created.id}`)))[0]).toBe(404);
    expect((await status(svc.call('POST', '/v1/ingest/secure', '{}', created.token as string, NDJSON)))[0]).toBe(401);
  });

  it('rejects unknown capabilities and actions with 400', async () => {
    expect(
      (
        await status(
          svc.call('POST', '/v2/tokens', { name: 'x', datasetCapabilities: { secure: { ingest: ['read'] } } }),
        )
      )[0],
    ).toBe(400);
    expect(
      (await status(svc.call('POST', '/v2/tokens', { name: 'x', orgCapabilities: { spaceships: ['create'] } })))[0],
    ).toBe(400);
    expect((await status(svc.call('POST', '/v2/tokens', { description: 'no name' })))[0]).toBe(400);
  });

  it('does not let a token grant rights it lacks, and needs apiTokens|create at all', async () => {
    const noTokens = await svc.apiToken({ secure: { ingest: ['create'] } });
    expect((await status(svc.call('POST', '/v2/tokens', { name: 'x' }, noTokens)))[0]).toBe(403);
    const creator = await svc.apiToken({ secure: { ingest: ['create'] } }, { apiTokens: ['create'] });
    expect(
      (
        await status(
          svc.call(
            'POST',
            '/v2/tokens',
            { name: 'sub', datasetCapabilities: { secure: { ingest: ['create'] } } },
            creator,
          ),
        )
      )[0],
    ).toBe(200);
    const [code, message] = await status(
      svc.call('POST', '/v2/tokens', { name: 'more', datasetCapabilities: { other: { ingest: ['create'] } } }, creator),
    );
    expect(code).toBe(403);
    expect(message).toMatch(/datasetCapabilities\.other\.ingest/);
  });

  it('a token that expires cannot create or regenerate a token that outlives it', async () => {
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const creator = await svc.apiToken(
      { secure: { ingest: ['create'] } },
      { apiTokens: ['create', 'read', 'update'] },
      { expiresAt: inAnHour },
    );
    const make = (expiresAt: string | null) =>
      status(
        svc.call(
          'POST',
          '/v2/tokens',
          { name: 'child', datasetCapabilities: { secure: { ingest: ['create'] } }, expiresAt },
          creator,
        ),
      );
    const [forever, why] = await make(null);
    expect(forever).toBe(403);
    expect(why).toMatch(
      /^Forbidden: the new token would outlive the token making it, which expires at .*; give an expiry no later than that$/,
    );
    expect((await make(new Date(Date.now() + 7_200_000).toISOString()))[0]).toBe(403);
    expect((await make(new Date(Date.now() + 1_800_000).toISOString()))[0]).toBe(200);
    // Regenerating: neither the new secret nor the old one may outlive the caller (a target that never
    // expires, made by the owner: one that expires keeps its expiry at the latest anyway).
    const target = (await (
      await svc.call('POST', '/v2/tokens', { name: 'target', datasetCapabilities: { secure: { ingest: ['create'] } } })
    ).json()) as { id: string };
    const regen = (body: object) => status(svc.call('POST', `/v2/tokens/${target.id}/regenerate`, body, creator));
    expect(
      (
        await regen({
          existingTokenExpiresAt: new Date(Date.now() + 7_200_000).toISOString(),
          newTokenExpiresAt: new Date(Date.now() + 600_000).toISOString(),
        })
      )[0],
    ).toBe(403);
    expect((await regen({ existingTokenExpiresAt: new Date().toISOString(), newTokenExpiresAt: null }))[0]).toBe(403);
    expect(
      (
        await regen({
          existingTokenExpiresAt: new Date().toISOString(),
          newTokenExpiresAt: new Date(Date.now() + 600_000).toISOString(),
        })
      )[0],
    ).toBe(200);
    // The owner's token does not expire: it may make tokens that never do.
    expect((await status(svc.call('POST', '/v2/tokens', { name: 'forever', datasetCapabilities: {} })))[0]).toBe(200);
  });

  it('regenerates: a new id and secret, the old one valid until its new expiry', async () => {
    const created = (await (
      await svc.call('POST', '/v2/tokens', { name: 'rot', datasetCapabilities: { secure: { ingest: ['create'] } } })
    ).json()) as { id: string; token: string };
    const r = await svc.call('POST', `/v2/tokens/${created.id}/regenerate`, {
      existingTokenExpiresAt: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect(r.status).toBe(200);
    const next = (await r.json()) as { id: string; token: string; name: string; datasetCapabilities: unknown };
    expect(next.id).not.toBe(created.id);
    expect(next.name).toBe('rot');
    expect(next.datasetCapabilities).toEqual({ secure: { ingest: ['create'] } });
    expect((await status(svc.call('POST', '/v1/ingest/secure', '{}', created.token, NDJSON)))[0]).toBe(200);
    expect((await status(svc.call('POST', '/v1/ingest/secure', '{}', next.token, NDJSON)))[0]).toBe(200);
    await svc.call('POST', `/v2/tokens/${next.id}/regenerate`, { existingTokenExpiresAt: new Date().toISOString() });
    expect((await status(svc.call('POST', '/v1/ingest/secure', '{}', next.token, NDJSON)))[0]).toBe(401);
  });
});

describe('viewCapabilities', () => {
  it('are stored and returned by create, get, list and regenerate, across a restart; a bad one is a 400', async () => {
    const dir = tempDir();
    let s = await startTestService({}, dir);
    try {
      const views = { errors: { query: ['read'] }, '*': { share: ['read', 'create'] } };
      const made = (await (
        await s.call('POST', '/v2/tokens', { name: 'viewer', datasetCapabilities: {}, viewCapabilities: views })
      ).json()) as { id: string; viewCapabilities: unknown };
      expect(made.viewCapabilities).toEqual(views);
      const plain = (await (await s.call('POST', '/v2/tokens', { name: 'plain' })).json()) as {
        viewCapabilities: unknown;
      };
      expect(plain.viewCapabilities).toEqual({});
      const regen = (await (
        await s.call('POST', `/v2/tokens/${made.id}/regenerate`, { existingTokenExpiresAt: new Date().toISOString() })
      ).json()) as { id: string; viewCapabilities: unknown };
      expect(regen.viewCapabilities).toEqual(views);
      await s.close();
      s = await startTestService({}, dir);
      expect(
        ((await (await s.call('GET', `/v2/tokens/${regen.id}`)).json()) as { viewCapabilities: unknown })
          .viewCapabilities,
      ).toEqual(views);
      const listed = (await (await s.call('GET', '/v2/tokens')).json()) as { id: string; viewCapabilities: unknown }[];
      expect(listed.find((t) => t.id === regen.id)?.viewCapabilities).toEqual(views);
      for (const bad of [{ v: { query: ['write'] } }, { v: { constructor: ['read'] } }, { v: [] }]) {
        const r = await s.call('POST', '/v2/tokens', { name: 'bad', viewCapabilities: bad });
        expect(r.status, JSON.stringify(bad)).toBe(400);
        expect(((await r.json()) as { message: string }).message).toMatch(/^viewCapabilities\.v/);
      }
    } finally {
      await s.stop();
    }
  });
});

describe('owner token', () => {
  it('is generated on first start into <data-dir>/admin-token with mode 0600, and reused', async () => {
    const dir = tempDir();
    const cfg = buildConfig({ service: { listen: '127.0.0.1:0', data_dir: dir } }, {});
    const first = await startService(cfg.service, pino({ level: 'silent' }), {});
    const file = join(dir, 'admin-token');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^xapt-/);
    expect(first.adminToken).toBe(token);
    await first.close();
    const second = await startService(cfg.service, pino({ level: 'silent' }), {});
    expect(second.adminToken).toBe(token);
    const r = await fetch(`${second.url}/v2/user`, { headers: { authorization: `Bearer ${token}` } });
    expect(await r.json()).toMatchObject({ id: 'owner', role: { id: 'owner' } });
    await second.close();
  });
});
