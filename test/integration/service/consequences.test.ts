/**
 * Rights checked on what an action makes happen, not only on its route (issue 29): a principal with fewer
 * rights acting on what others made (a monitor, a token, a notifier, a dataset's retention and fields, a
 * starred query) can neither act beyond its rights nor make later work (a monitor's runs, a notifier's
 * deliveries) carry more than it may read. Also: notifiers never send to link-local or metadata addresses
 * and never keep a receiver's answer, the service's own datasets are its alone, and DuckDB itself refuses
 * to touch files or change settings on the connections queries run on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/cli/config.js';
import { tickPhaseMs } from '../../../src/service/monitors/scheduler.js';
import type { AlertNotification } from '../../../src/service/notifiers/channel.js';
import { CHANNELS } from '../../../src/service/notifiers/channels/index.js';
import { httpReceiver, type HttpReceiver } from '../../support/monitor-receivers.js';
import { ADMIN, startTestService, walkingClock, type TestService } from '../../support/helpers.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;
const clock = walkingClock(T0);

let svc: TestService;
let hook: HttpReceiver;

beforeAll(async () => {
  hook = await httpReceiver();
  const cfg = buildConfig(
    { service: { memory_limit: '256MB', monitors: { enabled: false }, notifiers: { attempts: 1, timeout: '5s' } } },
    {},
  );
  svc = await startTestService({ monitors: cfg.service.monitors, notifiers: cfg.service.notifiers }, undefined, {
    clock,
  });
  for (const name of ['web', 'secret']) await svc.createDataset(name);
});
afterAll(async () => {
  await svc?.stop();
  await hook?.close();
});

async function json(r: Promise<Response>, status = 200): Promise<Record<string, unknown>> {
  const res = await r;
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/** A user with no base rights and one custom role of these capabilities; its PAT. */
async function userWith(name: string, datasetCapabilities: object, orgCapabilities: object): Promise<string> {
  const { id, pat } = await svc.userWithPat('none', name);
  await json(
    svc.call('POST', '/v2/rbac/roles', { name: `${name}-role`, members: [id], datasetCapabilities, orgCapabilities }),
  );
  return pat;
}

const CRUD = ['create', 'read', 'update', 'delete'];

const SAMPLE: AlertNotification = {
  action: 'Open',
  monitorId: 'mon_x',
  title: 'x',
  description: '',
  body: 'x',
  value: 1,
  queryStartTime: new Date(0),
  queryEndTime: new Date(0),
  timestamp: new Date(0),
  matchedEvent: null,
  groupKeys: null,
  groupValues: null,
  alertKey: 'mon_x',
};

describe('what an action makes happen carries no more than its actor may (issue 29)', () => {
  it("editing someone's monitor: the runs carry the editor's rights, and a query beyond them is a 403", async () => {
    const editor = await userWith('editor', { web: { query: ['read'] } }, { monitors: CRUD, notifiers: CRUD });
    const own = await json(
      svc.call('POST', '/v2/notifiers', { name: 'owner hook', properties: { webhook: { url: `${hook.url}/owner` } } }),
    );
    clock.t = T0;
    const m = await json(
      svc.call('POST', '/v2/monitors', {
        name: 'web events',
        type: 'MatchEvent',
        aplQuery: "['web']",
        notifierIds: [own.id],
        intervalMinutes: 1,
        rangeMinutes: 1,
      }),
    );
    const mine = await json(
      svc.call(
        'POST',
        '/v2/notifiers',
        { name: 'editor hook', properties: { webhook: { url: `${hook.url}/editor` } } },
        editor,
      ),
    );
    const update = { ...m, aplQuery: 'union *', notifierIds: [mine.id] };
    // What the editor may not read is refused outright.
    const refused = await json(
      svc.call('PUT', `/v2/monitors/${m.id as string}`, { ...update, aplQuery: "['secret']" }, editor),
      403,
    );
    expect(refused.message).toMatch(/dataset "secret"/);
    await json(svc.call('PUT', `/v2/monitors/${m.id as string}`, update, editor));
    // One run after events land in both datasets: the editor's hook sees web's, never secret's.
    const phase = tickPhaseMs(svc.alerting.monitors.get(m.id as string)!);
    clock.t = T0 + phase;
    await svc.alerting.scheduler.arm(svc.alerting.monitors.get(m.id as string)!);
    clock.t = T0 + MIN + phase;
    const at = new Date(clock.t - 20_000).toISOString();
    const token = await svc.apiToken({ web: { ingest: ['create'] }, secret: { ingest: ['create'] } });
    await json(svc.call('POST', '/v1/ingest/web', [{ _time: at, kind: 'web-event' }], token));
    await json(svc.call('POST', '/v1/ingest/secret', [{ _time: at, kind: 'secret-event' }], token));
    await svc.alerting.scheduler.runDue();
    const seen = hook.requests.filter((r) => r.path === '/editor').map((r) => r.body);
    expect(seen.some((b) => b.includes('web-event'))).toBe(true);
    expect(seen.some((b) => b.includes('secret-event'))).toBe(false);
  });

  it('a monitor over a pattern is seen and tuned only by who may read every dataset it reads, datasets made since included', async () => {
    const hi = await userWith(
      'patternhi',
      { '*': { query: ['read'] } },
      { monitors: CRUD, datasets: ['create', 'read'] },
    );
    const lo = await userWith('patternlo', { pa1: { query: ['read'] } }, { monitors: CRUD });
    await json(svc.call('POST', '/v2/datasets', { name: 'pa1' }));
    const token = await svc.apiToken({ pa1: { ingest: ['create'] }, pa2: { ingest: ['create'] } });
    await json(svc.call('POST', '/v1/ingest/pa1', [{ v: 1 }], token));
    clock.t = T0;
    const m = await json(
      svc.call(
        'POST',
        '/v2/monitors',
        {
          name: 'pattern',
          type: 'Threshold',
          operator: 'Above',
          threshold: 3,
          aplQuery: 'union withsource=src pa* | summarize v = count()',
          intervalMinutes: 1,
          rangeMinutes: 1,
        },
        hi,
      ),
    );
    const id = m.id as string;
    expect((await svc.call('GET', `/v2/monitors/${id}`, undefined, lo)).status).toBe(200);
    // A dataset the pattern matches, made after: lo may not read it, so lo may no longer tune the monitor.
    await json(svc.call('POST', '/v2/datasets', { name: 'pa2' }));
    await json(svc.call('POST', '/v1/ingest/pa2', [{ v: 1 }, { v: 2 }], token));
    expect((await svc.call('PUT', `/v2/monitors/${id}`, { ...m, threshold: 5 }, lo)).status).toBe(404);
    // Once it has run over it, it is hidden from lo altogether.
    const phase = tickPhaseMs(svc.alerting.monitors.get(id)!);
    clock.t = T0 + phase;
    await svc.alerting.scheduler.arm(svc.alerting.monitors.get(id)!);
    clock.t = T0 + MIN + phase;
    await svc.alerting.scheduler.runDue();
    expect(svc.alerting.monitors.get(id)!.datasets.sort()).toEqual(['pa1', 'pa2']);
    expect((await svc.call('GET', `/v2/monitors/${id}`, undefined, lo)).status).toBe(404);
  });

  it("attaching someone's notifier neither locks its maker out nor lets a lesser token use it unseen", async () => {
    const maker = await userWith('attachmaker', { web: { query: ['read'] } }, { notifiers: CRUD, monitors: CRUD });
    const n = await json(
      svc.call('POST', '/v2/notifiers', { name: 'mine', properties: { webhook: { url: `${hook.url}/mine` } } }, maker),
    );
    clock.t = T0;
    await json(
      svc.call('POST', '/v2/monitors', {
        name: 'secret events',
        type: 'MatchEvent',
        aplQuery: "['secret']",
        notifierIds: [n.id],
        intervalMinutes: 1,
        rangeMinutes: 1,
      }),
    );
    // The maker still changes its own notifier.
    await json(
      svc.call(
        'PUT',
        `/v2/notifiers/${n.id as string}`,
        { name: 'mine', properties: { webhook: { url: `${hook.url}/mine2` } } },
        maker,
      ),
    );
    // A token that may not see notifiers does not send through another's.
    const blind = await svc.apiToken({ web: { query: ['read'] } }, { monitors: CRUD });
    const r = await json(
      svc.call(
        'POST',
        '/v2/monitors',
        {
          name: 'x',
          type: 'MatchEvent',
          aplQuery: "['web']",
          notifierIds: [n.id],
          intervalMinutes: 1,
          rangeMinutes: 1,
        },
        blind,
      ),
      403,
    );
    expect(r.message).toMatch(/sending through notifier "mine", which someone else made, takes notifiers\|read/);
  });

  it('acting on a token takes every right the token holds; regenerating never extends the old secret', async () => {
    const keeper = await userWith('keeper', {}, { apiTokens: CRUD });
    const ingest = await json(
      svc.call('POST', '/v2/tokens', { name: 'ingest', datasetCapabilities: { web: { ingest: ['create'] } } }),
    );
    const strong = await json(
      svc.call('POST', '/v2/tokens', {
        name: 'strong',
        orgCapabilities: { users: CRUD, rbac: CRUD },
        expiresAt: '2027-01-01T00:00:00Z',
      }),
    );
    for (const t of [ingest, strong]) {
      const del = await json(svc.call('DELETE', `/v2/tokens/${t.id as string}`, undefined, keeper), 403);
      expect(del.message).toMatch(/every right it holds/);
      await json(
        svc.call(
          'POST',
          `/v2/tokens/${t.id as string}/regenerate`,
          { existingTokenExpiresAt: '2099-01-01T00:00:00Z' },
          keeper,
        ),
        403,
      );
    }
    // The owner may, but the old secret of an expired token stays expired.
    const soon = await json(
      svc.call('POST', '/v2/tokens', {
        name: 'soon',
        datasetCapabilities: { web: { query: ['read'] } },
        expiresAt: new Date(Date.now() + 1500).toISOString(),
      }),
    );
    await new Promise((r) => setTimeout(r, 1600));
    expect((await svc.call('GET', '/v2/user', undefined, soon.token as string)).status).toBe(401);
    const fresh = await json(
      svc.call('POST', `/v2/tokens/${soon.id as string}/regenerate`, {
        existingTokenExpiresAt: '2099-01-01T00:00:00Z',
      }),
    );
    expect((await svc.call('GET', '/v2/user', undefined, soon.token as string)).status).toBe(401);
    expect((await svc.call('GET', '/v2/user', undefined, fresh.token as string)).status).toBe(200);
    await json(svc.call('DELETE', `/v2/tokens/${ingest.id as string}`), 204);
  });

  it("a notifier's secret never follows a new URL, and another's notifier is changed only by who holds its maker's rights", async () => {
    const created = await json(
      svc.call('POST', '/v2/notifiers', {
        name: 'signed',
        properties: {
          customWebhook: {
            url: `${hook.url}/signed`,
            body: '{"t":"{{.Title}}"}',
            secretHeaders: { Authorization: 'Bearer s3cret' },
          },
        },
      }),
    );
    const id = created.id as string;
    const { pat: user } = await svc.userWithPat('user', 'plainuser');
    const moved = {
      name: 'signed',
      properties: {
        customWebhook: {
          url: `${hook.url}/elsewhere`,
          body: '{"t":"{{.Title}}"}',
          secretHeaders: { Authorization: '' },
        },
      },
    };
    const refused = await json(svc.call('PUT', `/v2/notifiers/${id}`, moved, user), 403);
    expect(refused.message).toMatch(
      /to update notifier "signed" this token lacks .*a right of its maker; or users\|update/,
    );
    await json(svc.call('DELETE', `/v2/notifiers/${id}`, undefined, user), 403);
    // Even its maker: a stored secret is not sent to a new URL.
    const again = await json(svc.call('PUT', `/v2/notifiers/${id}`, moved), 400);
    expect(again.message).toMatch(/secretHeaders\.Authorization.*the url changed.*send its value again/);
    // The same URL keeps it; sent again with the new URL, it goes there.
    await json(
      svc.call('PUT', `/v2/notifiers/${id}`, {
        ...moved,
        properties: { customWebhook: { ...moved.properties.customWebhook, url: `${hook.url}/signed` } },
      }),
    );
    expect(svc.alerting.notifiers.get(id)!.properties.customWebhook!.secretHeaders).toEqual({
      Authorization: 'Bearer s3cret',
    });
    // Slack's URL is its credential: shown to who may change the notifier only.
    const slack = await json(
      svc.call('POST', '/v2/notifiers', {
        name: 'chat',
        properties: { slack: { slackUrl: `${hook.url}/T000/B000/XXXX` } },
      }),
    );
    const reader = await userWith('reader', { web: { query: ['read'] } }, { notifiers: ['read'] });
    const shown = await json(svc.call('GET', `/v2/notifiers/${slack.id as string}`, undefined, reader));
    expect(shown.properties).toEqual({ slack: { slackUrl: '' } });
    const listed = (await json(svc.call('GET', '/v2/notifiers', undefined, reader))) as unknown as Record<
      string,
      unknown
    >[];
    expect(JSON.stringify(listed)).not.toContain('XXXX');
    expect((await json(svc.call('GET', `/v2/notifiers/${slack.id as string}`))).properties).toEqual({
      slack: { slackUrl: `${hook.url}/T000/B000/XXXX` },
    });
    // An update sending it back empty, as GET showed it, keeps it.
    await json(
      svc.call('PUT', `/v2/notifiers/${slack.id as string}`, {
        name: 'chat2',
        properties: { slack: { slackUrl: '' } },
      }),
    );
    expect(svc.alerting.notifiers.get(slack.id as string)!.properties.slack!.slackUrl).toBe(
      `${hook.url}/T000/B000/XXXX`,
    );
    // A notifier whose maker is gone is changed only by who manages users.
    const makerToken = await json(
      svc.call('POST', '/v2/tokens', { name: 'maker', orgCapabilities: { notifiers: CRUD } }),
    );
    const orphan = await json(
      svc.call(
        'POST',
        '/v2/notifiers',
        { name: 'orphan', properties: { webhook: { url: `${hook.url}/orphan` } } },
        makerToken.token as string,
      ),
    );
    await json(svc.call('DELETE', `/v2/tokens/${makerToken.id as string}`), 204);
    const editor = await svc.apiToken({}, { notifiers: CRUD });
    const gone = await json(
      svc.call(
        'PUT',
        `/v2/notifiers/${orphan.id as string}`,
        { name: 'orphan', properties: { webhook: { url: `${hook.url}/mine` } } },
        editor,
      ),
      403,
    );
    expect(gone.message).toMatch(/its maker is gone: only who manages users may change it/);
  });

  it('notifiers never send to link-local or metadata addresses, nor with credentials in the URL, and keep no answer of the receiver', async () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/latest/meta-data/',
      'http://[fe80::1]/x',
      'http://[::ffff:169.254.169.254]/x',
      'http://[::a9fe:a9fe]/x',
      'http://[64:ff9b::a9fe:a9fe]/x',
      'http://[::ffff:0:a9fe:a9fe]/x',
      'http://[2002:a9fe:a9fe::1]/x',
      'http://100.100.100.200/x',
      'http://0.0.0.0:8077/x',
    ]) {
      const r = await json(svc.call('POST', '/v2/notifiers', { name: 'n', properties: { webhook: { url } } }), 400);
      expect(r.message, url).toMatch(/link-local, metadata or reserved address/);
    }
    const creds = await json(
      svc.call('POST', '/v2/notifiers', { name: 'n', properties: { webhook: { url: `http://u:p@127.0.0.1:9/x` } } }),
      400,
    );
    expect(creds.message).toMatch(/must not hold credentials/);
    // A failing receiver's body (an internal service's answer) is never kept: status and reason only.
    hook.failNext([403]);
    const failure = await CHANNELS.get('webhook')!
      .send(SAMPLE, { url: `${hook.url}/fails` } as never, svc.alerting.outbound)
      .then(
        () => undefined,
        (e: unknown) => (e as Error).message,
      );
    expect(failure).toBe('the webhook answered 403 (Forbidden)');
  });

  it('a receiver outside allow_networks or inside deny_networks is refused, at creation and as a name resolves', async () => {
    const cfg = buildConfig(
      {
        service: {
          memory_limit: '256MB',
          monitors: { enabled: false },
          notifiers: { attempts: 1, deny_networks: ['127.0.0.0/8', '::1/128'] },
        },
      },
      {},
    );
    const strict = await startTestService({ monitors: cfg.service.monitors, notifiers: cfg.service.notifiers });
    try {
      const r = await strict.call('POST', '/v2/notifiers', {
        name: 'n',
        properties: { webhook: { url: `${hook.url}/x` } },
      });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { message: string }).message).toMatch(
        /127\.0\.0\.1 is inside service\.notifiers\.deny_networks/,
      );
      // A name is checked as it resolves, at each delivery.
      const named = await strict.call('POST', '/v2/notifiers', {
        name: 'n',
        properties: { webhook: { url: `http://localhost:${new URL(hook.url).port}/x` } },
      });
      expect(named.status).toBe(200);
      const sent = hook.requests.length;
      await expect(
        strict.alerting.outbound.post(new URL(`http://localhost:${new URL(hook.url).port}/x`), {}),
      ).rejects.toThrow(/refused to send to localhost: .*deny_networks/);
      expect(hook.requests.length).toBe(sent);
    } finally {
      await strict.stop();
    }
    expect(() => buildConfig({ service: { notifiers: { allow_networks: ['10.0.0.0/33'] } } }, {})).toThrow(
      /service\.notifiers\.allow_networks: "10\.0\.0\.0\/33" is not a CIDR/,
    );
  });

  it("datasets:update alone neither shortens a retention (deleting data) nor reads or changes a dataset's fields", async () => {
    const token = await svc.apiToken({ secret: { ingest: ['create'] } });
    await json(svc.call('POST', '/v1/ingest/secret', [{ pin: '1234', _time: new Date().toISOString() }], token));
    const updater = await svc.apiToken({}, { datasets: ['read', 'update'] });
    const shorter = await json(
      svc.call('PUT', '/v2/datasets/secret', { retentionDays: 1, useRetentionPeriod: true }, updater),
      403,
    );
    expect(shorter.message).toMatch(
      /deletes the older events of dataset "secret": it takes the trim\|update or data\|delete/,
    );
    // The same field, present or not, answers alike.
    for (const field of ['pin', 'nope']) {
      expect((await svc.call('PUT', `/v2/datasets/secret/fields/${field}`, { hidden: true }, updater)).status).toBe(
        403,
      );
      expect((await svc.call('GET', `/v2/datasets/secret/fields/${field}`, undefined, updater)).status).toBe(403);
    }
    expect((await svc.call('GET', '/v2/datasets/secret/fields', undefined, updater)).status).toBe(403);
    expect((await svc.call('POST', '/v2/datasets/secret/mapfields', { name: 'pin' }, updater)).status).toBe(403);
    // With trim on it, the retention may shorten; a longer one never needs it.
    const trimmer = await svc.apiToken({ secret: { trim: ['update'] } }, { datasets: ['read', 'update'] });
    await json(svc.call('PUT', '/v2/datasets/secret', { retentionDays: 30, useRetentionPeriod: true }, trimmer));
    await json(svc.call('PUT', '/v2/datasets/secret', { retentionDays: 60, useRetentionPeriod: true }, updater));
    await json(svc.call('PUT', '/v2/datasets/secret', { retentionDays: 0, useRetentionPeriod: false }, updater));
  });

  it('a starred query is seen by who may query what it reads, whatever its dataset label', async () => {
    const reader = await userWith('webreader', { web: { query: ['read'] }, '*': { starredQueries: ['read'] } }, {});
    const save = (name: string, apl: string) =>
      json(svc.call('POST', '/v2/apl-starred-queries', { kind: 'apl', name, dataset: 'web', query: { apl } }));
    const hidden = await save('pins', "['secret'] | where pin == '1234'");
    const open = await save('web', "['web']");
    // One whose query does not bind (a typo) may mean anything: seen by who may query every dataset.
    const typo = await save('typo', "['secret'] | where pinn == '1234'");
    const listed = (await json(svc.call('GET', '/v2/apl-starred-queries?who=all', undefined, reader))) as unknown as {
      id: string;
    }[];
    expect(listed.map((s) => s.id)).toEqual([open.id]);
    expect((await svc.call('GET', `/v2/apl-starred-queries/${typo.id as string}`, undefined, reader)).status).toBe(404);
    expect((await svc.call('GET', `/v2/apl-starred-queries/${hidden.id as string}`, undefined, reader)).status).toBe(
      404,
    );
    // Nor can a saver label a query over what it may not read.
    const saver = await userWith('saver', { web: { query: ['read'], starredQueries: CRUD } }, {});
    const r = await svc.call(
      'POST',
      '/v2/apl-starred-queries',
      { kind: 'apl', name: 'x', dataset: 'web', query: { apl: "['secret']" } },
      saver,
    );
    expect(r.status).toBe(403);
  });

  it("the service's own datasets are its alone: reserved in any case, written by no token", async () => {
    const everything = await svc.apiToken({ '*': { ingest: ['create'], trim: ['update'] } }, { datasets: CRUD });
    for (const ds of ['ferry-monitor-runs', 'axiom-audit']) {
      const r = await json(svc.call('POST', `/v1/ingest/${ds}`, [{ fake: true }], everything), 403);
      expect(r.message).toMatch(/kept by the service itself/);
      await json(svc.call('POST', `/v2/datasets/${ds}/trim`, { maxDuration: '1s' }, everything), 403);
    }
    // The monitor runs carry figures of monitors over any dataset (the audit trail too): read with "*" and auditLog.
    const wide = await svc.apiToken({ '*': { query: ['read'] } });
    expect((await svc.call('POST', '/v1/query/_apl', { apl: "['ferry-monitor-runs'] | count" }, wide)).status).toBe(
      403,
    );
    const auditor = await svc.apiToken({ '*': { query: ['read'] } }, { auditLog: ['read'] });
    expect((await svc.call('POST', '/v1/query/_apl', { apl: "['ferry-monitor-runs'] | count" }, auditor)).status).toBe(
      200,
    );
    for (const name of ['Axiom-audit', 'AXIOM-x', 'FERRY-MONITOR-RUNS', 'Ferry-Monitor-Runs']) {
      const r = await json(svc.call('POST', '/v2/datasets', { name }, ADMIN), 400);
      expect(r.message, name).toMatch(/reserved, in any case|keeps a dataset of that name \(in any case\)/);
    }
  });

  it('DuckDB refuses files and settings on the connections queries run on', async () => {
    for (const sql of [
      "SELECT * FROM read_csv('/etc/passwd')",
      "SELECT * FROM read_text('/etc/hostname')",
      "COPY (SELECT 1) TO '/tmp/ferry-copied.csv'",
      "ATTACH '/tmp/ferry-attached.duckdb' AS other",
      'INSTALL httpfs',
      'SET enable_external_access = true',
      "SET memory_limit = '100GB'",
      'SET lock_configuration = false',
    ]) {
      await expect(svc.store.db.all(sql), sql).rejects.toThrow(
        /Permission Error|configuration has been locked|Cannot enable external access/,
      );
    }
    // What the store needs still works: ingest reads its spool, queries run.
    const token = await svc.apiToken({ web: { ingest: ['create'], query: ['read'] } });
    await json(svc.call('POST', '/v1/ingest/web', [{ still: 'ingesting' }], token));
  });
});
