/**
 * Monitors, notifiers and annotations through the API: the official client's services, validation with
 * the field named, capabilities and visibility, secrets never shown, and persistence across a restart.
 */
import { Axiom } from '@axiomhq/js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestService, tempDir, type TestService } from '../../../support/helpers.js';

let svc: TestService;
const dir = tempDir();
beforeAll(async () => {
  svc = await startTestService({}, dir);
  await svc.createDataset('web');
  await svc.createDataset('secret');
});
afterAll(async () => {
  await svc?.stop();
});

const threshold = (extra: object = {}) => ({
  name: 'errors',
  type: 'Threshold',
  aplQuery: "['web'] | summarize count() by bin_auto(_time)",
  operator: 'Above',
  threshold: 100,
  intervalMinutes: 5,
  rangeMinutes: 10,
  ...extra,
});

async function json(r: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

describe('monitors, notifiers and annotations API', () => {
  it('the official client creates, gets, lists, updates and deletes monitors and annotations', async () => {
    const client = new Axiom({ token: ADMIN, url: svc.url });
    const created = await client.monitors.create({ ...threshold(), notifierIDs: [] } as never);
    expect(created).toMatchObject({
      name: 'errors',
      type: 'Threshold',
      threshold: 100,
      operator: 'Above',
      intervalMinutes: 5,
      rangeMinutes: 10,
      createdBy: 'owner',
    });
    expect(created.id).toMatch(/^mon_/);
    expect((await client.monitors.get(created.id)).name).toBe('errors');
    expect((await client.monitors.list()).map((m) => m.id)).toContain(created.id);
    const updated = await client.monitors.update(created.id, { ...threshold(), threshold: 150 } as never);
    expect(updated.threshold).toBe(150);
    expect(updated.createdAt).toBe(created.createdAt);
    expect((await client.monitors.delete(created.id)).status).toBe(204);
    await expect(client.monitors.get(created.id)).rejects.toThrow(/not found/i);

    const ann = await client.annotations.create({
      type: 'deploy',
      datasets: ['web'],
      title: 'v1.2',
      description: 'rollout',
      // What axiom-js's own integration test sends: Axiom takes any text here.
      url: 'some-url',
    });
    expect(ann.id).toMatch(/^ann_/);
    expect(ann.title).toBe('v1.2');
    expect(ann.url).toBe('some-url');
    expect((await client.annotations.update(ann.id, { description: 'rolled back' })).description).toBe('rolled back');
    expect((await client.annotations.get(ann.id)).title).toBe('v1.2');
    expect((await client.annotations.list({ datasets: ['web'] })).map((a) => a.id)).toContain(ann.id);
    expect(await client.annotations.list({ datasets: ['secret'] })).toEqual([]);
    expect(
      await client.annotations.list({ datasets: ['web'], start: '2000-01-01T00:00:00Z', end: '2000-01-02T00:00:00Z' }),
    ).toEqual([]);
    expect((await client.annotations.delete(ann.id)).status).toBe(204);
  });

  it('refuses what the spec forbids with 400 naming the field', async () => {
    const cases: [object, RegExp][] = [
      [threshold({ intervalMinutes: 0 }), /^intervalMinutes must be at least 1$/],
      [threshold({ rangeMinutes: 0 }), /^rangeMinutes must be at least 1$/],
      [threshold({ secondDelay: 86_401 }), /^secondDelay must be at most 86400$/],
      [threshold({ compareDays: 8 }), /^compareDays must be at most 7$/],
      [threshold({ tolerance: 101 }), /^tolerance must be at most 100$/],
      [threshold({ operator: 'AboveOrBelow' }), /^operator AboveOrBelow .* applies to AnomalyDetection monitors only/],
      [threshold({ operator: undefined }), /^operator is required for a Threshold monitor/],
      [threshold({ mplQuery: 'x' }), /^aplQuery and mplQuery are mutually exclusive/],
      [
        threshold({ aplQuery: undefined, mplQuery: 'avg(cpu)' }),
        /^mplQuery is not a query this service can run: line 1, column 4/,
      ],
      [threshold({ aplQuery: undefined }), /^aplQuery is required/],
      [threshold({ type: 'Sometimes' }), /^type must be one of Threshold, MatchEvent, AnomalyDetection/],
      [threshold({ name: '' }), /^name is required$/],
      [threshold({ notifierIds: ['notify_nope'] }), /^notifierIds holds "notify_nope", which is not a notifier$/],
      [threshold({ aplQuery: "['nope'] | count" }), /^aplQuery is not a query this service can run: .*nope/],
      [
        threshold({ aplQuery: "['web'] | summarize count() by\n bin(_time, 1m) | wher" }),
        /^aplQuery is not a query this service can run: line 2, column/,
      ],
      [
        threshold({ aplQuery: "['web'] | project status = 'x'" }),
        /^aplQuery does not fit a Threshold monitor: its result has no numeric column/,
      ],
      [threshold({ columnName: 'nope' }), /^columnName "nope" is not a column of the query's result/],
      [
        { name: 'm', type: 'MatchEvent', aplQuery: "['web'] | where _time > ago(1h) | summarize count()" },
        /^aplQuery does not fit a MatchEvent monitor: line 1, column \d+: .*"summarize" changes the rows/,
      ],
      [
        { ...threshold({ type: 'AnomalyDetection' }), aplQuery: "['web'] | summarize count()" },
        /^aplQuery does not fit an AnomalyDetection monitor: its result must be a series binned by time/,
      ],
      [
        threshold({ triggerFromNRuns: 2, triggerAfterNPositiveResults: 3 }),
        /^triggerAfterNPositiveResults \(3\) cannot exceed triggerFromNRuns \(2\)/,
      ],
    ];
    for (const [body, message] of cases) {
      const r = await json(await svc.call('POST', '/v2/monitors', body));
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe(400);
      expect(r.body.message, JSON.stringify(body)).toMatch(message);
    }
    // Go clients' spellings: notifierIDs and keys in any case.
    const ok = await json(
      await svc.call('POST', '/v2/monitors', {
        NAME: 'n',
        Type: 'Threshold',
        aplquery: "['web'] | count",
        Operator: 'Below',
        threshold: 1,
        notifierIDs: null,
        disabledUntil: '0001-01-01T00:00:00Z',
      }),
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: 'n', type: 'Threshold', disabledUntil: null, notifierIds: [] });
    expect((await svc.call('DELETE', `/v2/monitors/${ok.body.id as string}`)).status).toBe(204);

    const notifierCases: [object, RegExp][] = [
      [{ name: 'x', properties: {} }, /^properties must hold exactly one channel, not 0/],
      [
        { name: 'x', properties: { slack: { slackUrl: 'https://h/1' }, webhook: { url: 'https://h/2' } } },
        /^properties must hold exactly one channel, not 2 \(slack, webhook\)/,
      ],
      [{ name: 'x', properties: { carrierPigeon: {} } }, /^properties.carrierPigeon is not a channel/],
      [
        { name: 'x', properties: { slack: { slackUrl: 'ftp://h' } } },
        /^properties.slack.slackUrl must be an http or https URL/,
      ],
      [
        { name: 'x', properties: { email: { emails: ['not an address'] } } },
        /^properties.email.emails has "not an address"/,
      ],
      [
        { name: 'x', properties: { customWebhook: { url: 'https://h/', body: '{{if .Action}}' } } },
        /^properties.customWebhook.body is not a template this service can render: line 1: \{\{if\}\} without \{\{end\}\}/,
      ],
      [
        { name: 'x', properties: { customWebhook: { url: 'https://h/', body: '{{.Nope}}' } } },
        /^properties.customWebhook.body is not a template .*can't evaluate field Nope/,
      ],
      [{ name: 'x', properties: { pagerduty: {} } }, /^properties.pagerduty.routingKey is required/],
      [{ properties: { slack: { slackUrl: 'https://h/1' } } }, /^name is required/],
    ];
    for (const [body, message] of notifierCases) {
      const r = await json(await svc.call('POST', '/v2/notifiers', body));
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.message, JSON.stringify(body)).toMatch(message);
    }
    for (const type of ['Deploy', 'deploy now', 'déploiement', 'deploy_1', ' deploy', '']) {
      const r = await json(await svc.call('POST', '/v2/annotations', { type, datasets: ['web'] }));
      expect(r.status, type).toBe(400);
      expect(r.body.message, type).toMatch(
        type ? /^type may hold only lowercase letters, digits and hyphens/ : /^type is required/,
      );
    }
    const slug = await json(await svc.call('POST', '/v2/annotations', { type: 'prod-deploy-2', datasets: ['web'] }));
    expect(slug.status).toBe(200);
    const ann = await json(await svc.call('POST', '/v2/annotations', { type: 'deploy', datasets: ['nope'] }));
    expect(ann).toEqual({ status: 400, body: { code: 400, message: 'datasets holds "nope", which is not a dataset' } });
    const backwards = await json(
      await svc.call('POST', '/v2/annotations', {
        type: 'deploy',
        datasets: ['web'],
        time: '2024-01-02T00:00:00Z',
        endTime: '2024-01-01T00:00:00Z',
      }),
    );
    expect(backwards.body.message).toMatch(/^endTime \(2024-01-01T00:00:00.000Z\) is before time/);
    const history = await json(await svc.call('GET', '/v2/monitors/mon_x/history'));
    expect(history.status).toBe(404);
  });

  it('checks capabilities, and shows a caller only monitors whose datasets it may query', async () => {
    const onSecret = await json(
      await svc.call(
        'POST',
        '/v2/monitors',
        threshold({ name: 'secret one', aplQuery: "['secret'] | summarize count() by bin_auto(_time)" }),
      ),
    );
    const onWeb = await json(await svc.call('POST', '/v2/monitors', threshold({ name: 'web one' })));
    const crud = { monitors: ['create', 'read', 'update', 'delete'] };
    const webOnly = await svc.apiToken({ web: { query: ['read'] } }, crud);
    const ids = ((await (await svc.call('GET', '/v2/monitors', undefined, webOnly)).json()) as { id: string }[]).map(
      (m) => m.id,
    );
    expect(ids).toContain(onWeb.body.id);
    expect(ids).not.toContain(onSecret.body.id);
    // The same answer whether the monitor exists or not.
    for (const id of [onSecret.body.id as string, 'mon_doesnotexist']) {
      for (const [method, path] of [
        ['GET', `/v2/monitors/${id}`],
        ['PUT', `/v2/monitors/${id}`],
        ['DELETE', `/v2/monitors/${id}`],
        ['GET', `/v2/monitors/${id}/history?startTime=2020-01-01T00:00:00Z&endTime=2030-01-01T00:00:00Z`],
      ]) {
        const r = await json(await svc.call(method!, path!, method === 'PUT' ? threshold() : undefined, webOnly));
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body.message).toBe(`monitor "${id}" not found`);
      }
    }
    const sneaky = await json(
      await svc.call(
        'POST',
        '/v2/monitors',
        threshold({ aplQuery: "['web'] | union ['secret'] | summarize count() by bin_auto(_time)" }),
        webOnly,
      ),
    );
    expect(sneaky).toEqual({
      status: 403,
      body: { code: 403, message: 'Forbidden: this token lacks the query|read capability on dataset "secret"' },
    });
    const readOnly = await svc.apiToken({ web: { query: ['read'] } }, { monitors: ['read'] });
    expect((await json(await svc.call('POST', '/v2/monitors', threshold(), readOnly))).status).toBe(403);
    expect(
      (await json(await svc.call('DELETE', `/v2/monitors/${onWeb.body.id as string}`, undefined, readOnly))).body
        .message,
    ).toBe('Forbidden: this token lacks the monitors|delete capability');
    for (const path of ['/v2/monitors', '/v2/notifiers', '/v2/annotations']) {
      expect((await svc.call('GET', path, undefined, 'xaat-wrong')).status).toBe(401);
      expect((await svc.call('GET', path, undefined, readOnly)).status).toBe(path === '/v2/monitors' ? 200 : 403);
    }
    // A monitor created by a token runs as that token and shows who made it.
    const mine = await json(await svc.call('POST', '/v2/monitors', threshold({ name: 'mine' }), webOnly));
    expect(mine.status).toBe(200);
    expect(mine.body.createdBy).not.toBe('owner');
  });

  it('never shows notifier secrets, keeps them when an update sends them empty, and keeps everything across a restart', async () => {
    const pd = await json(
      await svc.call('POST', '/v2/notifiers', {
        name: 'pd',
        properties: { pagerduty: { routingKey: 'R-123', token: 'T-9' } },
      }),
    );
    expect(pd.status).toBe(200);
    expect(pd.body.id).toMatch(/^notify_/);
    expect(pd.body.properties).toEqual({ pagerduty: { routingKey: '', token: '' } });
    const hook = await json(
      await svc.call('POST', '/v2/notifiers', {
        name: 'hook',
        properties: {
          customWebhook: {
            URL: 'https://example.com/hook',
            Body: '{"a":"{{.Action}}"}',
            Headers: { 'X-Team': 'ops' },
            secretHeaders: { Authorization: 'Bearer s3cret' },
          },
        },
      }),
    );
    expect(hook.body.properties).toEqual({
      customWebhook: {
        url: 'https://example.com/hook',
        body: '{"a":"{{.Action}}"}',
        headers: { 'X-Team': 'ops' },
        secretHeaders: { Authorization: '' },
      },
    });
    const renamed = await json(
      await svc.call('PUT', `/v2/notifiers/${pd.body.id as string}`, {
        name: 'pd2',
        properties: { pagerduty: { routingKey: '', token: '' } },
        disabledUntil: '2099-01-01T00:00:00Z',
      }),
    );
    expect(renamed.body).toMatchObject({
      name: 'pd2',
      disabledUntil: '2099-01-01T00:00:00.000Z',
      properties: { pagerduty: { routingKey: '' } },
    });
    expect(svc.alerting.notifiers.get(pd.body.id as string)!.properties).toEqual({
      pagerduty: { routingKey: 'R-123', token: 'T-9' },
    });
    // A snooze that has passed reads null (the spec: null when enabled), on every read.
    const soon = new Date(Date.now() + 1500).toISOString();
    const snoozed = await json(
      await svc.call('POST', '/v2/notifiers', {
        name: 'snoozed',
        properties: { slack: { slackUrl: 'https://hooks.example.com/s' } },
        disabledUntil: soon,
      }),
    );
    expect(snoozed.body.disabledUntil).toBe(soon);
    await new Promise((r) => setTimeout(r, 1600));
    const sid = snoozed.body.id as string;
    expect((await json(await svc.call('GET', `/v2/notifiers/${sid}`))).body.disabledUntil).toBeNull();
    const all = (await json(await svc.call('GET', '/v2/notifiers'))).body as unknown as Record<string, unknown>[];
    expect(all.find((n) => n.id === sid)?.disabledUntil).toBeNull();
    const m = await json(
      await svc.call('POST', '/v2/monitors', threshold({ name: 'kept', notifierIds: [pd.body.id, hook.body.id] })),
    );
    const a = await json(
      await svc.call('POST', '/v2/annotations', { type: 'deploy', datasets: ['web'], time: '2024-05-01T00:00:00Z' }),
    );

    await svc.close();
    svc = await startTestService({}, dir);
    expect((await json(await svc.call('GET', `/v2/monitors/${m.body.id as string}`))).body).toMatchObject({
      name: 'kept',
      notifierIds: [pd.body.id, hook.body.id],
    });
    expect((await json(await svc.call('GET', `/v2/notifiers/${hook.body.id as string}`))).body.name).toBe('hook');
    expect((await json(await svc.call('GET', `/v2/annotations/${a.body.id as string}`))).body).toMatchObject({
      type: 'deploy',
      time: '2024-05-01T00:00:00.000Z',
      endTime: null,
    });
    // Deleting a notifier takes it out of the monitors that named it.
    expect((await svc.call('DELETE', `/v2/notifiers/${hook.body.id as string}`)).status).toBe(204);
    expect((await json(await svc.call('GET', `/v2/monitors/${m.body.id as string}`))).body.notifierIds).toEqual([
      pd.body.id,
    ]);
  });

  it('a notifier deleted while monitors naming it are created or updated is taken out of every one of them', async () => {
    const slack = { slack: { slackUrl: 'https://hooks.example.com/x' } };
    const kept = (await json(await svc.call('POST', '/v2/notifiers', { name: 'kept', properties: slack }))).body;
    const existing = (await json(await svc.call('POST', '/v2/monitors', threshold({ name: 'updated' })))).body;
    const dangling: string[] = [];
    for (let round = 0; round < 12; round++) {
      const gone = (await json(await svc.call('POST', '/v2/notifiers', { name: `gone ${round}`, properties: slack })))
        .body.id as string;
      const notifierIds = [kept.id, gone];
      // Creates and an update start a little apart; the deletion lands among them.
      const writes = Array.from({ length: 4 }, async (_, k) => {
        await new Promise((r) => setTimeout(r, k));
        const r =
          k === 3
            ? await svc.call(
                'PUT',
                `/v2/monitors/${existing.id as string}`,
                threshold({ name: 'updated', notifierIds }),
              )
            : await svc.call('POST', '/v2/monitors', threshold({ name: `racing ${round}.${k}`, notifierIds }));
        // Refused only for naming a notifier already gone.
        if (r.status !== 200) expect((await json(r)).body.message).toMatch(/notifierIds/);
        return r.status === 200 ? ((await r.json()) as { id: string }).id : undefined;
      });
      await new Promise((r) => setTimeout(r, round % 4));
      expect((await svc.call('DELETE', `/v2/notifiers/${gone}`)).status).toBe(204);
      for (const id of await Promise.all(writes)) {
        if (!id) continue;
        const m = (await json(await svc.call('GET', `/v2/monitors/${id}`))).body;
        expect(m.notifierIds, `round ${round}`).toContain(kept.id);
        if ((m.notifierIds as string[]).includes(gone)) dangling.push(`round ${round}: ${id} names ${gone}`);
      }
    }
    expect(dangling.slice(0, 3)).toEqual([]);
  });
});
