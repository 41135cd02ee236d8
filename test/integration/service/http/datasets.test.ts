import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => svc.stop());

const DATASET_KEYS = [
  'canWrite',
  'created',
  'description',
  'id',
  'kind',
  'mapFields',
  'name',
  'retentionDays',
  'updatedAt',
  'useRetentionPeriod',
  'who',
];

describe('datasets', () => {
  it("a name of the full 128 characters works in every route; the router's refusals are {code, message} too", async () => {
    const name = `a${'b'.repeat(126)}c`;
    expect((await svc.call('POST', '/v2/datasets', { name })).status).toBe(200);
    expect((await svc.call('GET', `/v2/datasets/${name}`)).status).toBe(200);
    expect((await svc.call('PUT', `/v2/datasets/${name}`, { description: 'long' })).status).toBe(200);
    expect((await svc.call('GET', `/v2/datasets/${name}/fields`)).status).toBe(200);
    const token = await svc.apiToken({ [name]: { ingest: ['create'], query: ['read'] } });
    expect(
      (await svc.call('POST', `/v1/ingest/${name}`, '{"x":1}\n', token, { 'content-type': 'application/x-ndjson' }))
        .status,
    ).toBe(200);
    expect(
      (
        await svc.call(
          'POST',
          `/v1/datasets/${name}/query`,
          { startTime: '2000-01-01T00:00:00Z', endTime: '2100-01-01T00:00:00Z' },
          token,
        )
      ).status,
    ).toBe(200);
    expect((await svc.call('DELETE', `/v2/datasets/${name}`)).status).toBe(204);

    for (const [path, status, message] of [
      ['/v2/datasets/%ff', 400, 'the path /v2/datasets/%ff is not valid percent-encoding'],
      [
        `/v2/datasets/${'x'.repeat(3000)}`,
        414,
        `a segment of the path /v2/datasets/${'x'.repeat(187)}… is longer than 2048 characters`,
      ],
    ] as const) {
      const r = await svc.call('GET', path);
      expect(r.status, path.slice(0, 40)).toBe(status);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await r.json()).toEqual({ code: status, message });
    }
  });

  it('keeps edgeDeployment and names its creator in who, whatever the credential', async () => {
    const tokenSecret = await svc.apiToken({}, { datasets: ['create', 'read'] }, { name: 'terraform' });
    const viaToken = (await (
      await svc.call('POST', '/v2/datasets', { name: 'edge-a', edgeDeployment: 'cloud.eu-central-1.aws' }, tokenSecret)
    ).json()) as Record<string, unknown>;
    expect(viaToken).toMatchObject({ who: 'terraform', edgeDeployment: 'cloud.eu-central-1.aws' });
    const user = await svc.userWithPat('admin', 'Grace');
    const viaPat = (await (await svc.call('POST', '/v2/datasets', { name: 'edge-b' }, user.pat)).json()) as Record<
      string,
      unknown
    >;
    expect(viaPat.who).toBe('Grace');
    expect(viaPat).not.toHaveProperty('edgeDeployment');
    const bad = await svc.call('POST', '/v2/datasets', { name: 'edge-c', edgeDeployment: 5 });
    expect(bad.status).toBe(400);
    expect(await (await svc.call('GET', '/v2/datasets/edge-a')).json()).toEqual(viaToken);
  });

  it('creates, gets, lists, updates and deletes on /v2 with every Dataset field', async () => {
    const created = await svc.call('POST', '/v2/datasets', { name: 'web-logs', description: 'nginx' });
    expect(created.status).toBe(200);
    expect(created.headers.get('content-type')).toMatch(/^application\/json/);
    const d = (await created.json()) as Record<string, unknown>;
    expect(Object.keys(d).sort()).toEqual(DATASET_KEYS);
    expect(d).toMatchObject({
      id: 'web-logs',
      name: 'web-logs',
      description: 'nginx',
      kind: 'service:events:v1',
      retentionDays: 0,
      useRetentionPeriod: false,
      mapFields: [],
      // The spec's who: the name of the creator (the owner's user is named Owner).
      who: 'Owner',
    });
    // No edgeDeployment given: the key is omitted (the spec: omitted when empty).
    expect(d).not.toHaveProperty('edgeDeployment');

    const got = await (await svc.call('GET', '/v2/datasets/web-logs')).json();
    expect(got).toEqual(d);
    const list = (await (await svc.call('GET', '/v2/datasets')).json()) as { name: string }[];
    expect(list.map((x) => x.name)).toContain('web-logs');

    const upd = await svc.call('PUT', '/v2/datasets/web-logs', {
      description: 'changed',
      retentionDays: 7,
      useRetentionPeriod: true,
    });
    expect(upd.status).toBe(200);
    const u = (await upd.json()) as Record<string, unknown>;
    expect(u).toMatchObject({ description: 'changed', retentionDays: 7, useRetentionPeriod: true });
    expect(await (await svc.call('GET', '/v2/datasets/web-logs')).json()).toEqual(u);

    const del = await svc.call('DELETE', '/v2/datasets/web-logs');
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    const gone = await svc.call('GET', '/v2/datasets/web-logs');
    expect(gone.status).toBe(404);
    expect(gone.headers.get('x-axiom-trace-id')).toBeTruthy();
    expect(((await gone.json()) as { message: string }).message).toMatch(/not found/i);
  });

  it('serves the same datasets on /v1', async () => {
    expect((await svc.call('POST', '/v1/datasets', { name: 'v1ds' })).status).toBe(200);
    expect(((await (await svc.call('GET', '/v1/datasets/v1ds')).json()) as { name: string }).name).toBe('v1ds');
    const trim = await svc.call('POST', '/v1/datasets/v1ds/trim', { maxDuration: '1h' });
    expect(trim.status).toBe(200);
    expect(await trim.json()).toEqual({ numDeleted: 0 });
    expect((await svc.call('DELETE', '/v1/datasets/v1ds')).status).toBe(204);
  });

  it('answers 409 for a duplicate name and 400 for bad names or kinds', async () => {
    await svc.createDataset('dup');
    const again = await svc.call('POST', '/v2/datasets', { name: 'dup' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: 409 });
    for (const name of ['', '-lead', 'trail.', 'has space', 'axiom-audit', 'x'.repeat(129), 'ü']) {
      const r = await svc.call('POST', '/v2/datasets', { name });
      expect(r.status, name).toBe(400);
      expect(((await r.json()) as { code: number }).code).toBe(400);
    }
    expect((await svc.call('POST', '/v2/datasets', { name: 'k', kind: 'nope' })).status).toBe(400);
    expect((await svc.call('POST', '/v2/datasets', { description: 'no name' })).status).toBe(400);
    expect(
      (await svc.call('POST', '/v2/datasets', { name: 'r', useRetentionPeriod: true, retentionDays: 0 })).status,
    ).toBe(400);
  });

  it('trims old events with a Go duration and answers 204 on /v2', async () => {
    await svc.createDataset('trimmed');
    const token = await svc.apiToken();
    const old = new Date(Date.now() - 3 * 3600_000).toISOString();
    await svc.call('POST', '/v1/ingest/trimmed', `{"_time":"${old}","a":1}\n{"a":2}`, token, {
      'content-type': 'application/x-ndjson',
    });
    const r = await svc.call('POST', '/v2/datasets/trimmed/trim', { maxDuration: '1h0m0s' });
    expect(r.status).toBe(204);
    expect((await svc.store.readEvents('trimmed')).map((e) => e.a)).toEqual([2]);
    expect((await svc.call('POST', '/v2/datasets/trimmed/trim', { maxDuration: 'soon' })).status).toBe(400);
    // A duration longer than any event's age deletes nothing (it reaches before the earliest time there is).
    expect((await svc.call('POST', '/v2/datasets/trimmed/trim', { maxDuration: '1000000000000h' })).status).toBe(204);
    expect((await svc.store.readEvents('trimmed')).map((e) => e.a)).toEqual([2]);
  });

  it('refuses a body value of the wrong type instead of converting it', async () => {
    await svc.createDataset('typed');
    const refused = async (method: string, path: string, body: unknown) => {
      const r = await svc.call(method, path, body);
      expect(r.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(((await r.json()) as { message: string }).message).toMatch(/must be/);
    };
    await refused('PUT', '/v2/datasets/typed', { description: 5 });
    await refused('PUT', '/v2/datasets/typed/mapfields', false);
    await refused('PUT', '/v2/datasets/typed/mapfields', [1]);
    await refused('POST', '/v2/datasets/typed/mapfields', { name: 7 });
    await refused('POST', '/v2/tokens', { name: 1e308 });
    const ds = (await (await svc.call('GET', '/v2/datasets/typed')).json()) as Record<string, unknown>;
    expect(ds).toMatchObject({ description: '', mapFields: [] });
  });

  it('lists fields with types, built-ins included, and updates field metadata', async () => {
    await svc.createDataset('fielded');
    const token = await svc.apiToken();
    await svc.call('POST', '/v1/ingest/fielded', '{"s":"x","n":1,"f":1.5,"b":true,"arr":[1],"o":{"k":"v"}}', token, {
      'content-type': 'application/x-ndjson',
    });
    const fields = (await (await svc.call('GET', '/v2/datasets/fielded/fields')).json()) as {
      name: string;
      type: string;
    }[];
    expect(Object.fromEntries(fields.map((f) => [f.name, f.type]))).toEqual({
      _sysTime: 'datetime',
      _time: 'datetime',
      s: 'string',
      n: 'integer',
      f: 'float',
      b: 'boolean',
      arr: 'array',
      'o.k': 'string',
    });
    const put = await svc.call('PUT', '/v2/datasets/fielded/fields/n', { description: 'a count', unit: 'none' });
    expect(await put.json()).toMatchObject({
      name: 'n',
      type: 'integer',
      description: 'a count',
      unit: 'none',
      hidden: false,
    });
    expect((await svc.call('GET', '/v2/datasets/fielded/fields/missing')).status).toBe(404);
  });

  it('manages map fields: add, list, replace, remove, with 400/409/404 on bad requests', async () => {
    await svc.createDataset('mapped');
    expect(await (await svc.call('GET', '/v2/datasets/mapped/mapfields')).json()).toEqual([]);
    expect(await (await svc.call('POST', '/v2/datasets/mapped/mapfields', { name: 'attributes' })).json()).toEqual({
      name: 'attributes',
    });
    expect((await svc.call('POST', '/v2/datasets/mapped/mapfields', { name: 'attributes' })).status).toBe(409);
    expect((await svc.call('POST', '/v2/datasets/mapped/mapfields', { name: '__invalid__' })).status).toBe(400);
    expect((await svc.call('PUT', '/v2/datasets/mapped/mapfields', ['dupe', 'dupe'])).status).toBe(400);
    expect(await (await svc.call('PUT', '/v2/datasets/mapped/mapfields', ['attributes', 'labels'])).json()).toEqual([
      'attributes',
      'labels',
    ]);
    expect(
      ((await (await svc.call('GET', '/v2/datasets/mapped')).json()) as { mapFields: string[] }).mapFields,
    ).toEqual(['attributes', 'labels']);
    expect((await svc.call('DELETE', '/v2/datasets/mapped/mapfields/labels')).status).toBe(204);
    expect((await svc.call('DELETE', '/v2/datasets/mapped/mapfields/labels')).status).toBe(404);
    expect(await (await svc.call('GET', '/v2/datasets/mapped/mapfields')).json()).toEqual(['attributes']);

    // A map field keeps its object whole; other objects flatten.
    const token = await svc.apiToken();
    await svc.call(
      'POST',
      '/v1/ingest/mapped',
      '{"attributes":{"http.method":"GET","n":{"x":1}},"other":{"a":1}}',
      token,
      { 'content-type': 'application/x-ndjson' },
    );
    const [ev] = await svc.store.readEvents('mapped');
    expect(ev!.attributes).toEqual({ 'http.method': 'GET', n: { x: 1 } });
    expect(ev!['other.a']).toBe(1);
  });

  it('answers 404 for unknown routes with a JSON body', async () => {
    const r = await svc.call('GET', '/v2/nothing-here');
    expect(r.status).toBe(404);
    expect(r.headers.get('x-axiom-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await r.json()) as { message: string }).message).toMatch(/not found/);
  });
});
