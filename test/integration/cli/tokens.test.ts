/** `ferry tokens` against a running service: API tokens for ingest and queries, made from the shell. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFerry, startTestService, tempDir, type TestService } from '../../support/helpers.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('logs');
  await svc.createDataset('other');
});
afterAll(async () => svc?.stop());

const ferry = (args: string[]) => runFerry(svc.url, ['tokens', ...args]);
const ingest = (dataset: string, token: string) =>
  svc.call('POST', `/v1/datasets/${dataset}/ingest`, '{"msg":"hi"}', token, { 'content-type': 'application/x-ndjson' });
const query = (token: string) =>
  svc.call('POST', '/v1/datasets/_apl?format=tabular', { apl: "['logs'] | count" }, token);

describe('ferry tokens', () => {
  it('makes an ingest token that can ingest into its dataset only, lists it, regenerates and deletes it', async () => {
    const created = await ferry(['create', 'shipper', '--ingest', 'logs', '--description', 'the host agent']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(
      /^created API token [0-9a-f-]{36} \(shipper\); the secret is shown only this once:\n$/,
    );
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^xaat-/);
    const id = /token ([0-9a-f-]{36})/.exec(created.stderr)![1]!;
    expect((await ingest('logs', secret)).status).toBe(200);
    expect((await ingest('other', secret)).status).toBe(403);
    expect((await query(secret)).status).toBe(403);

    const list = await ferry(['list']);
    expect(list.stdout).toMatch(/^id\s+name\s+expires\s+datasets\s+org\n/);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+shipper\\s+never\\s+logs: ingest\\s+-\\n`));
    expect(list.stdout).not.toContain(secret);

    const again = await ferry(['regenerate', id]);
    expect(again.code, again.stderr).toBe(0);
    const newId = new RegExp(
      `^regenerated ${id} as API token ([0-9a-f-]{36}) \\(shipper\\); the secret is shown only this once:\n$`,
    ).exec(again.stderr)?.[1];
    expect(newId, again.stderr).toBeDefined();
    const renewed = again.stdout.trim();
    expect(renewed).toMatch(/^xaat-/);
    expect(renewed).not.toBe(secret);
    expect((await ingest('logs', renewed)).status).toBe(200);
    expect((await ingest('logs', secret)).status).toBe(401);

    expect((await ferry(['delete', newId!])).stdout).toBe(`deleted API token ${newId}\n`);
    expect((await ingest('logs', renewed)).status).toBe(401);
  });

  it('takes capabilities from a JSON file and from --query and --org', async () => {
    const file = join(tempDir(), 'caps.json');
    writeFileSync(file, JSON.stringify({ datasetCapabilities: { other: { ingest: ['create'] } } }));
    const made = await ferry(['create', 'reader', '--capabilities', file, '--query', 'logs', '--org', 'monitors=read']);
    expect(made.code, made.stderr).toBe(0);
    const secret = made.stdout.trim();
    expect((await query(secret)).status).toBe(200);
    expect((await ingest('other', secret)).status).toBe(200);
    expect((await ingest('logs', secret)).status).toBe(403);
    expect((await svc.call('GET', '/v2/monitors', undefined, secret)).status).toBe(200);
    expect((await svc.call('POST', '/v2/monitors', { name: 'm' }, secret)).status).toBe(403);
  });

  it('says what is wrong in one line: exit 2 for usage, 1 for what the service refuses', async () => {
    const none = await ferry(['create', 'empty']);
    expect([none.code, none.stderr]).toEqual([
      2,
      'ferry: tokens create needs capabilities: --ingest DATASET, --query DATASET, --org AREA=ACTIONS or --capabilities FILE\n',
    ]);
    const org = await ferry(['create', 'x', '--org', 'monitors']);
    expect([org.code, org.stderr]).toEqual([
      2,
      'ferry: --org takes AREA=ACTIONS (monitors=read,create), got "monitors"\n',
    ]);
    const refused = await ferry(['create', 'x', '--org', 'monitors=fly']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'ferry: creating the API token failed (400): orgCapabilities.monitors: action "fly" not allowed (one of create, read, update, delete)\n',
    );
    const gone = await ferry(['delete', 'no-such-token']);
    expect([gone.code, gone.stderr]).toEqual([
      1,
      'ferry: deleting the API token failed (404): token "no-such-token" not found\n',
    ]);
    const unknown = await ferry(['rotate', 'x']);
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      'ferry: unknown tokens command "rotate" (try ferry tokens --help)\n',
    ]);
  });
});
