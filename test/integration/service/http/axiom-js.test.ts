import { Axiom, AxiomWithoutBatching, ContentEncoding, ContentType } from '@axiomhq/js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN, startTestService, type TestService } from '../../../support/helpers.js';

let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  token = await svc.apiToken({ '*': { ingest: ['create'], query: ['read'] } });
  // The client warns about personal tokens on every construction; that is expected for the owner client.
  vi.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterAll(async () => svc.stop());

describe('@axiomhq/js against the local service', () => {
  it('manages datasets through the client: create, get, list, update, trim, delete', async () => {
    const admin = new Axiom({ token: ADMIN, url: svc.url });
    const created = await admin.datasets.create({ name: 'js-datasets', description: 'from js' });
    expect(created).toMatchObject({ name: 'js-datasets', description: 'from js' });
    expect((await admin.datasets.get('js-datasets')).name).toBe('js-datasets');
    expect((await admin.datasets.list()).map((d) => d.name)).toContain('js-datasets');
    expect((await admin.datasets.update('js-datasets', { description: 'updated' })).description).toBe('updated');
    expect(await admin.datasets.trim('js-datasets', '1s')).toBeTruthy();
    const del = (await admin.datasets.delete('js-datasets')) as Response;
    expect(del.status).toBe(204);
    await expect(admin.datasets.get('js-datasets')).rejects.toThrow(/not found/i);
  });

  it('ingests through the batching client and every event arrives', async () => {
    const admin = new Axiom({ token: ADMIN, url: svc.url });
    await admin.datasets.create({ name: 'js-batch' });
    const errors: unknown[] = [];
    const client = new Axiom({ token, url: svc.url, onError: (e) => errors.push(e) });
    for (let i = 0; i < 2500; i++) client.ingest('js-batch', { i, msg: `line ${i}`, _time: new Date().toISOString() });
    await client.flush();
    expect(errors).toEqual([]);
    expect(await svc.store.count('js-batch')).toBe(2500);
    const ids = (await svc.store.readEvents('js-batch')).map((e) => e.i as number).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 2500 }, (_, i) => i));
  });

  it('returns exact ingest counts from the unbatched client (gzip NDJSON) and ingestRaw (JSON, NDJSON, CSV)', async () => {
    const admin = new Axiom({ token: ADMIN, url: svc.url });
    await admin.datasets.create({ name: 'js-raw' });
    const client = new AxiomWithoutBatching({
      token,
      url: svc.url,
      onError: (e) => {
        throw e;
      },
    });
    const one = await client.ingest('js-raw', { foo: 'bar' });
    expect(one).toMatchObject({ ingested: 1, failed: 0, failures: [] });
    const two = await client.ingest('js-raw', [{ foo: 'bar' }, { bar: 'baz' }]);
    expect(two).toMatchObject({ ingested: 2, failed: 0, failures: [] });
    const raw = [
      await client.ingestRaw(
        'js-raw',
        JSON.stringify([{ foo: 'bar' }, { bar: 'baz' }]),
        ContentType.JSON,
        ContentEncoding.Identity,
      ),
      await client.ingestRaw('js-raw', '{"foo":"bar"}\n{"bar":"baz"}', ContentType.NDJSON, ContentEncoding.Identity),
      await client.ingestRaw('js-raw', 'foo\nbar\nbaz', ContentType.CSV, ContentEncoding.Identity),
    ];
    for (const r of raw) expect(r).toMatchObject({ ingested: 2, failed: 0, failures: [] });
    expect(await svc.store.count('js-raw')).toBe(9);
  });
});
