import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTable } from '../../../src/cli/query-output.js';
import { ADMIN, runFerry, startTestService, tempDir, type TestService } from '../../support/helpers.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('app');
  const token = await svc.apiToken();
  const lines = [
    { _time: '2024-01-01T00:00:00Z', level: 'info', msg: 'started', ms: 5 },
    { _time: '2024-01-01T00:00:01Z', level: 'error', msg: 'failed, "badly"', ms: 120 },
    { _time: '2024-01-01T00:00:02Z', level: 'info', msg: 'done', ms: 7 },
  ]
    .map((e) => JSON.stringify(e))
    .join('\n');
  expect(
    (await svc.call('POST', '/v1/ingest/app', lines, token, { 'content-type': 'application/x-ndjson' })).status,
  ).toBe(200);
});
afterAll(async () => svc?.stop());

const ferry = (args: string[], env: Record<string, string> = {}) => runFerry(svc.url, args, env);

describe('ferry query', () => {
  it('prints an aligned table by default', async () => {
    const r = await ferry([
      'query',
      "['app'] | summarize n = count(), worst = max(ms) by level | sort by level asc",
      '--start',
      '2023-12-31T00:00:00Z',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      ['level  n  worst', '-----  -  -----', 'error  1    120', 'info   2      7', '(2 rows)', ''].join('\n'),
    );
  });

  it('prints csv and ndjson', async () => {
    const csv = await ferry(['query', "['app'] | where level == 'error' | project msg, ms", '--format', 'csv']);
    expect(csv.stdout).toBe('msg,ms\n"failed, ""badly""",120\n');
    const nd = await ferry(['query', "['app'] | project ms | sort by ms asc", '-f', 'ndjson']);
    expect(nd.stdout).toBe('{"ms":5}\n{"ms":7}\n{"ms":120}\n');
  });

  it('takes the URL and token from flags', async () => {
    const r = await ferry(['query', "['app'] | count", '--url', svc.url, '--token', ADMIN, '-f', 'json'], {
      FERRY_URL: 'http://127.0.0.1:1',
      FERRY_TOKEN: 'wrong',
    });
    expect(JSON.parse(r.stdout).tables[0].columns).toEqual([[3]]);
  });

  it('exits non-zero with the service message for a bad query, a bad token or no service', async () => {
    const bad = await ferry(['query', "['app'] | where nosuch > 1"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('query failed (400): line 1, column 17: unknown column or variable "nosuch"');
    const unauth = await ferry(['query', "['app'] | count"], { FERRY_TOKEN: 'xaat-nope' });
    expect(unauth.stderr).toContain('query failed (401)');
    const down = await ferry(['query', "['app'] | count"], { FERRY_URL: 'http://127.0.0.1:1' });
    expect(down.stderr).toContain('cannot reach http://127.0.0.1:1');
  });
});

describe('renderTable', () => {
  it('pads text left and numbers right, and shows nulls as empty cells', () => {
    expect(
      renderTable({
        name: '0',
        fields: [{ name: 'a' }, { name: 'num' }],
        columns: [
          ['x', null],
          [1, 1234],
        ],
      }),
    ).toBe('a   num\n-  ----\nx     1\n   1234\n(2 rows)\n');
  });
});

describe('ferry query --starred', () => {
  it('runs a starred query by name with its time range; --start overrides it; an unknown name exits 1 saying so', async () => {
    const saved = await svc.call('POST', '/v2/apl-starred-queries', {
      kind: 'apl',
      name: 'errors',
      query: {
        apl: "['app'] | where level == 'error' | project msg",
        startTime: '2024-01-01T00:00:00Z',
        endTime: '2024-01-02T00:00:00Z',
      },
      metadata: {},
    });
    expect(saved.status).toBe(200);
    const r = await ferry(['query', '--starred', 'errors', '-f', 'ndjson']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('{"msg":"failed, \\"badly\\""}\n');
    // The saved range holds the event; a later start leaves it out.
    const later = await ferry(['query', '--starred', 'errors', '-f', 'ndjson', '--start', '2024-06-01T00:00:00Z']);
    expect(later.stdout).toBe('');
    const none = await ferry(['query', '--starred', 'nope']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('ferry: no starred query named "nope" that this token may read\n');
    const both = await ferry(['query', '--starred', 'errors', "['app']"]);
    expect(both.code).toBe(2);
  });
});

describe('ferry query finds the service as it was started, or reads the data directory itself', () => {
  it('takes the address from FERRY_LISTEN when no URL is given, and says nothing of an end it was given', async () => {
    const r = await ferry(['query', "['app'] | count", '--start', '2023-12-31T00:00:00Z', '-f', 'ndjson'], {
      FERRY_URL: '',
      FERRY_LISTEN: new URL(svc.url).host,
    });
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '{"count":3}\n', '']);
    // Without --start the service applies an end of now itself, and says so.
    const implicit = await ferry(['query', "['app'] | count", '-f', 'ndjson']);
    expect(implicit.stderr).toBe("warn: implicit end time of 'now' applied\n");
  });

  it('--local queries a data directory no service runs on, and refuses one a service holds', async () => {
    const dir = join(tempDir(), 'data');
    const piped = spawnSync(
      process.execPath,
      ['dist/src/cli/main.js', 'pipe', '--dataset', 'web', '--local', '--data-dir', dir],
      {
        input: '{"status":200}\n{"status":500}\n{"status":503}\n',
        encoding: 'utf8',
      },
    );
    expect(piped.status, piped.stderr).toBe(0);
    const r = await ferry(
      ['query', '--local', '--data-dir', dir, "['web'] | where status >= 500 | count", '-f', 'ndjson'],
      {
        FERRY_URL: 'http://127.0.0.1:1',
      },
    );
    expect([r.code, r.stdout]).toEqual([0, '{"count":2}\n']);
    const held = await ferry(['query', '--local', '--data-dir', svc.dataDir, "['app'] | count"]);
    expect(held.code).toBe(1);
    expect(held.stderr).toMatch(
      /^ferry: .* is held by a running service \(.*PID \d+\): run the query without --local\n$/,
    );
    const bad = await ferry(['query', '--local', '--data-dir', dir, "['web'] | where nosuch > 1"]);
    expect([bad.code, bad.stderr]).toEqual([
      1,
      'ferry: query failed: line 1, column 17: unknown column or variable "nosuch"\n',
    ]);
  });
});
