/**
 * Monitors on a schedule: a clock the scheduler takes walks hours in seconds over events ingested with
 * chosen timestamps; notifications go to real HTTP receivers and a real SMTP server.
 */
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../../../src/cli/config.js';
import { seededRandom } from '../../../../bench/torture.js';
import { renderMetrics } from '../../../../src/agent/metrics.js';
import { tickPhaseMs } from '../../../../src/service/monitors/scheduler.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HostMetricsSource } from '../../../../src/agent/sources/host-metrics.js';
import { LocalSink } from '../../../../src/agent/sinks/local.js';
import { pointEvent } from '../../../../src/ingest/metric-points.js';
import { metricsBody } from '../../../support/otlp-metrics.js';
import { httpReceiver, type HttpReceiver, smtpReceiver } from '../../../support/monitor-receivers.js';
import { ADMIN, startTestService, walkingClock, tempDir, type TestService } from '../../../support/helpers.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;
const clock = walkingClock(T0);

let svc: TestService;
let hook: HttpReceiver;
let smtp: Awaited<ReturnType<typeof smtpReceiver>>;
const dir = tempDir();

function serviceConfig() {
  const cfg = buildConfig(
    {
      service: {
        memory_limit: '256MB',
        // Walked by the test: the scheduler does not tick on its own.
        monitors: { enabled: false },
        notifiers: {
          attempts: 3,
          timeout: '5s',
          pagerduty_url: `${hook.url}/pd`,
          opsgenie_url: `${hook.url}/og`,
          opsgenie_eu_url: `${hook.url}/og-eu`,
          discord_url: `${hook.url}/discord`,
          smtp: { host: '127.0.0.1', port: smtp.port, from: 'ferry@example.com', starttls: 'off' },
        },
      },
    },
    {},
  );
  return { monitors: cfg.service.monitors, notifiers: cfg.service.notifiers };
}

async function start(): Promise<void> {
  svc = await startTestService(serviceConfig(), dir, { clock });
}

let ingestToken: string;
beforeAll(async () => {
  hook = await httpReceiver();
  smtp = await smtpReceiver();
  await start();
  for (const d of ['t1', 't2', 't3', 't4', 't5', 't6']) await svc.createDataset(d);
  ingestToken = await svc.apiToken({ '*': { ingest: ['create'] } });
  // The fields most monitors name exist before them (one test makes a monitor before its field).
  const long = new Date(T0 - 30 * 86_400_000).toISOString();
  await ingest('t2', [{ _time: long, host: 'old' }]);
  await ingest('t4', [{ _time: long, level: 'debug', msg: 'old' }]);
});
afterAll(async () => {
  await svc?.stop();
  await hook?.close();
  await smtp?.close();
});

async function ingest(dataset: string, events: object[]): Promise<void> {
  const r = await svc.call('POST', `/v1/ingest/${dataset}`, events, ingestToken);
  expect(r.status).toBe(200);
}

async function post(path: string, body: object): Promise<Record<string, unknown>> {
  const r = await svc.call('POST', path, body);
  const out = (await r.json()) as Record<string, unknown>;
  expect(r.status, JSON.stringify(out)).toBe(200);
  return out;
}

/** A monitor's schedule: tick k falls at T0-aligned minute k plus the monitor's phase. */
function ticks(id: string, intervalMinutes = 1) {
  const phase = tickPhaseMs(svc.alerting.monitors.get(id)!);
  return {
    at: (k: number) => T0 + k * intervalMinutes * MIN + phase,
    /** Moves the clock to tick k and runs what is due. */
    run: async (k: number) => {
      clock.t = T0 + k * intervalMinutes * MIN + phase;
      await svc.alerting.scheduler.runDue();
    },
  };
}

async function runs(monitorId: string): Promise<Record<string, unknown>[]> {
  await svc.alerting.scheduler.runDue();
  const r = await svc.call('POST', '/v1/query/_apl', {
    apl: `['ferry-monitor-runs'] | where monitorId == '${monitorId}' | sort by _time asc`,
    startTime: '2020-01-01T00:00:00Z',
    endTime: '2030-01-01T00:00:00Z',
  });
  const body = (await r.json()) as { tables: { fields: { name: string }[]; columns: unknown[][] }[] };
  const t = body.tables[0]!;
  return (t.columns[0] ?? []).map((_, i) => Object.fromEntries(t.fields.map((f, j) => [f.name, t.columns[j]![i]])));
}

/** Creates a monitor at a clock inside tick 0 of its schedule (the id decides the phase). */
async function monitor(body: object): Promise<{ id: string; tick: ReturnType<typeof ticks> }> {
  clock.t = T0;
  const m = await post('/v2/monitors', { intervalMinutes: 1, rangeMinutes: 1, ...body });
  const id = m.id as string;
  const tick = ticks(id, (body as { intervalMinutes?: number }).intervalMinutes ?? 1);
  // Re-armed inside tick 0, so that the first run is tick 1.
  clock.t = tick.at(0);
  await svc.alerting.scheduler.arm(svc.alerting.monitors.get(id)!);
  return { id, tick };
}

const fromHook = (path: string) => hook.requests.filter((r) => r.path.startsWith(path));

describe('monitor schedule', () => {
  it('Threshold: opens once, stays open without repeating, resolves, and a restart while open sends no second Open', async () => {
    const wh = await post('/v2/notifiers', { name: 'wh', properties: { webhook: { url: `${hook.url}/wh1` } } });
    const { id, tick } = await monitor({
      name: 'too many errors',
      description: '5xx',
      type: 'Threshold',
      aplQuery: "['t1'] | summarize count() by bin(_time, 1m)",
      operator: 'Above',
      threshold: 5,
      notifierIds: [wh.id],
    });
    const burst = (k: number, n: number) =>
      ingest(
        't1',
        Array.from({ length: n }, (_, i) => ({ _time: new Date(tick.at(k) - 30_000 + i).toISOString(), i })),
      );
    await burst(1, 10);
    await tick.run(1);
    expect(fromHook('/wh1').map((r) => r.json())).toEqual([
      {
        action: 'Open',
        event: expect.objectContaining({
          monitorID: id,
          title: 'too many errors',
          description: '5xx',
          value: 10,
          body: 'Current value of 10 is above the threshold value of 5',
          matchedEvent: null,
          groupKeys: null,
          groupValues: null,
        }),
      },
    ]);
    const open = fromHook('/wh1')[0]!.json().event as Record<string, string>;
    expect(open.queryEndTime).toBe(
      new Date(tick.at(1))
        .toISOString()
        .replace('T', ' ')
        .replace(/\.?0*Z$/, '') + ' +0000 UTC',
    );

    await burst(2, 9);
    await tick.run(2);
    expect(fromHook('/wh1')).toHaveLength(1);

    // A restart while open: the state is kept, and a positive run sends nothing.
    await svc.close();
    await start();
    await burst(3, 8);
    await tick.run(3);
    expect(fromHook('/wh1')).toHaveLength(1);

    await burst(4, 2);
    await tick.run(4);
    expect(fromHook('/wh1').map((r) => (r.json() as { action: string }).action)).toEqual(['Open', 'Closed']);
    expect((fromHook('/wh1')[1]!.json().event as { body: string }).body).toBe(
      'Current value of 2 is no longer above the threshold value of 5',
    );

    const history = await (
      await svc.call('GET', `/v2/monitors/${id}/history?startTime=2026-01-01T00:00:00Z&endTime=2027-01-01T00:00:00Z`)
    ).json();
    expect(history).toEqual([
      { checkId: id, name: 'too many errors', state: 'open', timestamp: new Date(tick.at(1)).toISOString() },
      { checkId: id, name: 'too many errors', state: 'closed', timestamp: new Date(tick.at(4)).toISOString() },
    ]);
    const recorded = await runs(id);
    expect(recorded.map((r) => [r.state, r.value, r.notified])).toEqual([
      ['triggered', 10, 1],
      ['triggered', 9, 0],
      ['triggered', 8, 0],
      ['normal', 2, 1],
    ]);
    expect(recorded[0], JSON.stringify(recorded[0])).toMatchObject({
      queryStartTime: new Date(tick.at(1) - MIN).toISOString(),
      queryEndTime: new Date(tick.at(1)).toISOString(),
      monitorName: 'too many errors',
      rowsMatched: 10,
    });
    expect(recorded[0]!.error).toBeUndefined();

    // The same runs through /v2/monitors/{id}/runs, newest first, as the console draws them.
    const range = 'startTime=2026-01-01T00:00:00Z&endTime=2027-01-01T00:00:00Z';
    const listed = (await (await svc.call('GET', `/v2/monitors/${id}/runs?${range}&limit=3`)).json()) as Record<
      string,
      unknown
    >[];
    expect(listed.map((r) => [r._time, r.state, r.value])).toEqual([
      [new Date(tick.at(4)).toISOString(), 'normal', 2],
      [new Date(tick.at(3)).toISOString(), 'triggered', 8],
      [new Date(tick.at(2)).toISOString(), 'triggered', 9],
    ]);
    expect(listed[0]).not.toHaveProperty('_sysTime');
    for (const [query, message] of [
      ['limit=0', 'limit must be a whole number from 1 to 1000, not "0"'],
      ['limit=x', 'limit must be a whole number from 1 to 1000, not "x"'],
    ]) {
      const r = await svc.call('GET', `/v2/monitors/${id}/runs?${range}&${query}`);
      expect(await r.json()).toEqual({ code: 400, message });
    }
    expect((await svc.call('GET', `/v2/monitors/${id}/runs?endTime=2027-01-01T00:00:00Z`)).status).toBe(400);
    expect((await svc.call('GET', `/v2/monitors/mon_nope/runs?${range}`)).status).toBe(404);
  });

  it('notifyByGroup with 2-of-2 runs: a state per group; a group whose series stops resolves with value 0', async () => {
    const wh = await post('/v2/notifiers', { name: 'wh2', properties: { webhook: { url: `${hook.url}/wh2` } } });
    const { tick } = await monitor({
      name: 'per host',
      type: 'Threshold',
      aplQuery: "['t2'] | summarize n = count() by host",
      operator: 'AboveOrEqual',
      threshold: 3,
      notifyByGroup: true,
      triggerFromNRuns: 2,
      triggerAfterNPositiveResults: 2,
      notifierIds: [wh.id],
    });
    const load = (k: number, counts: Record<string, number>) =>
      ingest(
        't2',
        Object.entries(counts).flatMap(([host, n]) =>
          Array.from({ length: n }, (_, i) => ({ _time: new Date(tick.at(k) - 20_000 + i).toISOString(), host })),
        ),
      );
    await load(1, { a: 3, b: 1 });
    await tick.run(1);
    expect(fromHook('/wh2')).toHaveLength(0);
    await load(2, { a: 4, b: 3 });
    await tick.run(2);
    await load(3, { b: 5 });
    await tick.run(3);
    const sent = fromHook('/wh2').map(
      (r) => r.json() as { action: string; event: { groupKeys: string[]; groupValues: string[]; value: number } },
    );
    const seen = sent.map((s) => [s.action, s.event.groupKeys, s.event.groupValues, s.event.value]);
    expect(seen[0]).toEqual(['Open', ['host'], ['a'], 4]);
    // The third run closes a (its series stopped) and opens b (its second positive run of two).
    expect(seen.slice(1)).toHaveLength(2);
    expect(seen.slice(1)).toEqual(
      expect.arrayContaining([
        ['Closed', ['host'], ['a'], 0],
        ['Open', ['host'], ['b'], 5],
      ]),
    );
  });

  it('a monitor of metrics (mplQuery) opens and resolves per series, records what it read, and refuses what cannot fit', async () => {
    expect((await svc.call('POST', '/v2/datasets', { name: 'mem', kind: 'otel:metrics:v1' })).status).toBe(200);
    const wh = await post('/v2/notifiers', { name: 'wh-mpl', properties: { webhook: { url: `${hook.url}/whm` } } });
    const mplQuery = 'mem:`memory.used` | align using max | group by host using max';
    const { id, tick } = await monitor({
      name: 'memory high',
      type: 'Threshold',
      mplQuery,
      operator: 'Above',
      threshold: 100,
      notifyByGroup: true,
      notifierIds: [wh.id],
    });
    const shown = (await (await svc.call('GET', `/v2/monitors/${id}`)).json()) as Record<string, unknown>;
    expect(shown).toMatchObject({ aplQuery: '', mplQuery });
    const load = async (k: number, values: Record<string, number>) => {
      const t = Math.floor((tick.at(k) - 20_000) / 1000);
      const body = metricsBody(
        Object.entries(values).map(([host, v]) => ({
          metric: 'memory.used',
          kind: 'gauge',
          unit: 'By',
          tags: { host },
          points: [{ t, v }],
        })),
      );
      const r = await svc.call('POST', '/v1/metrics', body, ingestToken, {
        'content-type': 'application/x-protobuf',
        'x-axiom-metrics-dataset': 'mem',
      });
      expect(r.status).toBe(200);
    };
    await load(1, { h1: 150, h2: 50 });
    await tick.run(1);
    await load(2, { h1: 60, h2: 70 });
    await tick.run(2);
    const seen = fromHook('/whm').map((r) => {
      const b = r.json() as {
        action: string;
        event: { groupKeys: string[]; groupValues: string[]; value: number; body: string };
      };
      return [b.action, b.event.groupKeys, b.event.groupValues, b.event.value];
    });
    expect(seen).toEqual([
      ['Open', ['host'], ['h1'], 150],
      ['Closed', ['host'], ['h1'], 60],
    ]);
    const recorded = await runs(id);
    expect(recorded.map((r) => [r.state, r.value, r.datasets])).toEqual([
      ['triggered', 150, ['mem']],
      ['normal', 60, ['mem']],
    ]);

    const refused = async (body: object) => {
      const r = await svc.call('POST', '/v2/monitors', { name: 'x', intervalMinutes: 1, rangeMinutes: 1, ...body });
      return [r.status, ((await r.json()) as { message: string }).message];
    };
    expect(await refused({ type: 'MatchEvent', mplQuery })).toEqual([
      400,
      expect.stringMatching(/^mplQuery does not fit a MatchEvent monitor/),
    ]);
    expect(await refused({ type: 'Threshold', operator: 'Above', mplQuery, columnName: 'v' })).toEqual([
      400,
      expect.stringMatching(/^columnName does not apply to an MPL query/),
    ]);
    expect(await refused({ type: 'Threshold', operator: 'Above', mplQuery: 'mem:`memory.used`[1h..]' })).toEqual([
      400,
      expect.stringMatching(/^mplQuery is not a query this service can run: line 1, column 19: Time is provided both/),
    ]);
    expect(await refused({ type: 'Threshold', operator: 'Above', mplQuery: 't1:x' })).toEqual([
      400,
      expect.stringMatching(/MPL queries metrics datasets/),
    ]);
    const other = await svc.apiToken({ t1: { query: ['read'] } }, { monitors: ['create', 'read'] });
    const r = await svc.call(
      'POST',
      '/v2/monitors',
      { name: 'x', type: 'Threshold', operator: 'Above', mplQuery },
      other,
    );
    expect(r.status).toBe(403);
  });

  it("a monitor on host_metrics memory opens when the host's used memory passes its threshold and resolves when it falls back", async () => {
    const proc = tempDir();
    const meminfo = (freeKb: number) =>
      writeFileSync(
        join(proc, 'meminfo'),
        `MemTotal: 1000 kB\nMemFree: ${freeKb} kB\nBuffers: 0 kB\nCached: 0 kB\nSReclaimable: 0 kB\nSUnreclaim: 0 kB\n`,
      );
    const source = new HostMetricsSource(
      'host',
      {
        intervalMs: 10_000,
        collectors: ['memory'],
        dataset: 'host-metrics',
        procPath: proc,
        rootPath: '/',
        hostName: 'db-1',
      },
      { info: () => undefined, warn: () => undefined },
    );
    // What the agent's pipeline does with the source's points: the local sink stores them.
    const sink = new LocalSink(svc.store, 'fallback');
    const collect = async (at: number) => {
      const points = await source.collect(Math.floor(at / 1000));
      const batch = Buffer.from(points.map((p) => `${pointEvent(p)}\n`).join(''));
      const out = await sink.send(batch, 'none', {
        dataset: 'host-metrics',
        params: { datasetKind: 'otel:metrics:v1' },
      });
      expect(out).toEqual({ kind: 'delivered', events: points.length });
    };
    meminfo(100);
    await collect(T0 - 30 * MIN);
    const wh = await post('/v2/notifiers', { name: 'wh-host', properties: { webhook: { url: `${hook.url}/whh` } } });
    const { tick } = await monitor({
      name: 'memory of db-1',
      type: 'Threshold',
      mplQuery: '`host-metrics`:`system.memory.utilization` | where state == "used" | align using max',
      operator: 'Above',
      threshold: 0.8,
      notifierIds: [wh.id],
    });
    await collect(tick.at(1) - 20_000);
    await tick.run(1);
    meminfo(700);
    await collect(tick.at(2) - 20_000);
    await tick.run(2);
    expect(
      fromHook('/whh').map((r) => {
        const b = r.json() as { action: string; event: { value: number; body: string } };
        return [b.action, b.event.value, b.event.body];
      }),
    ).toEqual([
      ['Open', 0.9, 'Current value of 0.9 is above the threshold value of 0.8'],
      ['Closed', 0.3, 'Current value of 0.3 is no longer above the threshold value of 0.8'],
    ]);
  });

  it('alertOnNoData: an empty result opens, data coming back resolves; skipResolved keeps the resolve quiet', async () => {
    const wh = await post('/v2/notifiers', {
      name: 'wh3',
      properties: { webhook: { url: `${hook.url}/nodata-loud` } },
    });
    const quiet = await post('/v2/notifiers', {
      name: 'wh3q',
      properties: { webhook: { url: `${hook.url}/nodata-quiet` } },
    });
    await ingest('t3', [{ _time: new Date(T0 - 86_400_000).toISOString(), x: 1 }]);
    const { tick } = await monitor({
      name: 'silence',
      type: 'Threshold',
      aplQuery: "['t3'] | summarize avg(x)",
      operator: 'Above',
      threshold: 100,
      alertOnNoData: true,
      notifierIds: [wh.id],
    });
    const { tick: tick2 } = await monitor({
      name: 'silence quiet',
      type: 'Threshold',
      aplQuery: "['t3'] | summarize avg(x)",
      operator: 'Above',
      threshold: 100,
      alertOnNoData: true,
      skipResolved: true,
      notifierIds: [quiet.id],
    });
    await tick.run(1);
    await tick2.run(1);
    await ingest(
      't3',
      [tick.at(2), tick2.at(2)].map((t) => ({ _time: new Date(t - 1000).toISOString(), x: 1 })),
    );
    await tick.run(2);
    await tick2.run(2);
    expect(
      fromHook('/nodata-loud').map((r) => [
        (r.json() as { action: string }).action,
        (r.json().event as { body: string }).body,
      ]),
    ).toEqual([
      ['Open', 'The query returned no data'],
      ['Closed', 'Current value of 1 is no longer above the threshold value of 100'],
    ]);
    expect(fromHook('/nodata-quiet').map((r) => (r.json() as { action: string }).action)).toEqual(['Open']);
  });

  it('a monitor made before its data (the dataset exists, the field not yet) is accepted; its runs report the missing field until it arrives', async () => {
    await svc.createDataset('later');
    const wh = await post('/v2/notifiers', { name: 'later', properties: { webhook: { url: `${hook.url}/later` } } });
    const { id, tick } = await monitor({
      name: 'slow requests',
      type: 'Threshold',
      aplQuery: "['later'] | where duration_ms > 500 | summarize avg(duration_ms) by bin(_time, 1m)",
      operator: 'Above',
      threshold: 0,
      notifierIds: [wh.id],
    });
    await tick.run(1);
    const first = (await runs(id)).at(-1)!;
    expect(first).toMatchObject({ state: 'error' });
    expect(first.error).toMatch(/unknown column or variable "duration_ms"/);
    expect(svc.alerting.health().failing.map((f) => f.id)).toContain(id);
    await ingest('later', [{ _time: new Date(tick.at(2) - 5000).toISOString(), duration_ms: 900 }]);
    await tick.run(2);
    const second = (await runs(id)).at(-1)!;
    expect(second).toMatchObject({ state: 'triggered', value: 900, error: null });
    expect(fromHook('/later').map((r) => (r.json() as { action: string }).action)).toEqual(['Open']);
    // What a type cannot take is still refused at once, naming what it may use.
    const r = await svc.call('POST', '/v2/monitors', {
      name: 'bad',
      type: 'MatchEvent',
      aplQuery: "['later'] | where not_yet == 1 | summarize count()",
      intervalMinutes: 1,
      rangeMinutes: 1,
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { message: string }).message).toMatch(
      /^aplQuery does not fit a MatchEvent monitor: .*may only use where, extend, project/,
    );
    const missing = await svc.call('POST', '/v2/monitors', {
      name: 'nowhere',
      type: 'Threshold',
      aplQuery: "['not-made-yet'] | summarize count()",
      threshold: 1,
      operator: 'Above',
      intervalMinutes: 1,
      rangeMinutes: 1,
    });
    expect(missing.status).toBe(400);
  });

  it('MatchEvent: each matching event is notified once, windows neither overlap nor leave gaps, and the caps hold', async () => {
    const wh = await post('/v2/notifiers', { name: 'wh4', properties: { webhook: { url: `${hook.url}/wh4` } } });
    const { id, tick } = await monitor({
      name: 'errors',
      type: 'MatchEvent',
      aplQuery: "['t4'] | where level == 'error' | project level, msg",
      notifierIds: [wh.id],
    });
    await ingest('t4', [
      { _time: new Date(tick.at(1) - 30_000).toISOString(), level: 'error', msg: 'a' },
      { _time: new Date(tick.at(1) - 20_000).toISOString(), level: 'info', msg: 'skip' },
      { _time: new Date(tick.at(1)).toISOString(), level: 'error', msg: 'on the edge' },
      { _time: new Date(tick.at(1) + 1).toISOString(), level: 'error', msg: 'just after' },
    ]);
    await tick.run(1);
    await tick.run(2);
    const msgs = fromHook('/wh4').map((r) => (r.json().event as { matchedEvent: { msg: string } }).matchedEvent.msg);
    expect(msgs).toEqual(['a', 'on the edge', 'just after']);
    expect((fromHook('/wh4')[0]!.json().event as { body: string }).body).toBe('{"level":"error","msg":"a"}');
    // 15 in one window: 10 notified this minute, 5 counted as suppressed.
    await ingest(
      't4',
      Array.from({ length: 15 }, (_, i) => ({
        _time: new Date(tick.at(3) - 40_000 + i).toISOString(),
        level: 'error',
        msg: `burst ${i}`,
      })),
    );
    await tick.run(3);
    expect(fromHook('/wh4')).toHaveLength(13);
    const last = (await runs(id)).at(-1)!;
    expect(last).toMatchObject({ state: 'triggered', rowsMatched: 15, opened: 10, suppressed: 5, notified: 10 });
  });

  it('AnomalyDetection: a spike outside the band of history opens, a return inside it resolves', async () => {
    const wh = await post('/v2/notifiers', { name: 'wh5', properties: { webhook: { url: `${hook.url}/wh5` } } });
    const { tick } = await monitor({
      name: 'odd traffic',
      type: 'AnomalyDetection',
      aplQuery: "['t5'] | summarize count() by bin(_time, 1m)",
      operator: 'AboveOrBelow',
      tolerance: 10,
      rangeMinutes: 10,
      notifierIds: [wh.id],
    });
    const minuteOf = (k: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        _time: new Date(Math.floor(tick.at(k) / MIN) * MIN - MIN + 1000 + i).toISOString(),
      }));
    const steady = [5, 6, 5, 4, 5, 6, 5, 5, 4];
    await ingest(
      't5',
      steady.flatMap((n, i) => minuteOf(i + 1, n)),
    );
    await tick.run(9);
    expect(fromHook('/wh5')).toHaveLength(0);
    await ingest('t5', minuteOf(10, 40));
    await tick.run(10);
    await ingest('t5', minuteOf(11, 5));
    await tick.run(11);
    const sent = fromHook('/wh5').map((r) => r.json() as { action: string; event: { value: number; body: string } });
    expect(sent.map((s) => [s.action, s.event.value])).toEqual([
      ['Open', 40],
      ['Closed', 5],
    ]);
    expect(sent[0]!.event.body).toMatch(
      /^Current value of 40 is above the expected range of [\d.]+ to [\d.]+ \(expected [\d.]+\)$/,
    );
  });

  it('AnomalyDetection on MPL: a gauge leaving the band of its own history opens, coming back resolves', async () => {
    expect((await svc.call('POST', '/v2/datasets', { name: 'gauges', kind: 'otel:metrics:v1' })).status).toBe(200);
    const wh = await post('/v2/notifiers', { name: 'wh-anomaly', properties: { webhook: { url: `${hook.url}/wha` } } });
    const { tick } = await monitor({
      name: 'odd depth',
      type: 'AnomalyDetection',
      mplQuery: 'gauges:depth | align to 1m using max',
      operator: 'AboveOrBelow',
      tolerance: 10,
      rangeMinutes: 10,
      notifierIds: [wh.id],
    });
    // One point in each minute before tick k, as an exporter sends a gauge.
    const at = (k: number, v: number) => ({ t: Math.floor(tick.at(k) / MIN) * 60 - 30, v });
    const send = async (points: { t: number; v: number }[]) => {
      const body = metricsBody([{ metric: 'depth', kind: 'gauge', tags: { queue: 'q1' }, points }]);
      const r = await svc.call('POST', '/v1/metrics', body, ingestToken, {
        'content-type': 'application/x-protobuf',
        'x-axiom-metrics-dataset': 'gauges',
      });
      expect(r.status).toBe(200);
    };
    await send([5, 6, 5, 4, 5, 6, 5, 5, 4].map((v, i) => at(i + 1, v)));
    await tick.run(9);
    expect(fromHook('/wha')).toHaveLength(0);
    await send([at(10, 40)]);
    await tick.run(10);
    await send([at(11, 5)]);
    await tick.run(11);
    const sent = fromHook('/wha').map((r) => r.json() as { action: string; event: { value: number; body: string } });
    expect(sent.map((x) => [x.action, x.event.value])).toEqual([
      ['Open', 40],
      ['Closed', 5],
    ]);
    expect(sent[0]!.event.body).toMatch(/^Current value of 40 is above the expected range of [\d.]+ to [\d.]+/);
  });

  it('an overdue monitor runs once for its latest tick; disabledUntil pauses it until the time passes', async () => {
    const { id, tick } = await monitor({
      name: 'sleepy',
      type: 'Threshold',
      aplQuery: "['t1'] | count",
      operator: 'Above',
      threshold: 1e9,
    });
    await tick.run(1);
    const skippedBefore = svc.alerting.scheduler.counts.skippedTicks;
    await tick.run(90); // 88 ticks passed over: one run, and the scheduler says it fell behind
    expect((await runs(id)).map((r) => [Date.parse(r._time as string), r.skippedTicks])).toEqual([
      [tick.at(1), 0],
      [tick.at(90), 88],
    ]);
    expect(svc.alerting.health().lastSkippedTick).toEqual({
      time: new Date(tick.at(90)).toISOString(),
      monitorId: id,
      skippedTicks: 88,
      delayMs: 0,
    });
    expect(svc.alerting.scheduler.counts.skippedTicks - skippedBefore).toBeGreaterThanOrEqual(88); // earlier tests' monitors too
    expect(renderMetrics(undefined, svc)).toMatch(/^ferry_monitor_skipped_ticks_total [1-9]/m);
    const m = svc.alerting.monitors.get(id)!;
    const r = await svc.call('PUT', `/v2/monitors/${id}`, {
      ...m,
      disabledUntil: new Date(tick.at(95) - 1).toISOString(),
    });
    expect(r.status).toBe(200);
    await tick.run(93);
    await tick.run(94);
    expect(await runs(id)).toHaveLength(2);
    await tick.run(95);
    // Ticks passed over by a pause are not falling behind.
    expect((await runs(id)).map((r) => [Date.parse(r._time as string), r.skippedTicks]).at(-1)).toEqual([
      tick.at(95),
      0,
    ]);
    // Running the same tick again does nothing.
    await tick.run(95);
    expect(await runs(id)).toHaveLength(3);
  });

  it('delivers through every channel in the shape its service takes, retries what may pass, records failures, and respects a snooze', async () => {
    const n = async (name: string, properties: object) =>
      (await post('/v2/notifiers', { name, properties })).id as string;
    const ids = [
      await n('slack', { slack: { slackUrl: `${hook.url}/slack/T1/B2` } }),
      await n('dw', { discordWebhook: { discordWebhookUrl: `${hook.url}/dwh/1/abc` } }),
      await n('discord', { discord: { discordChannel: '123456', discordToken: 'bot-tok' } }),
      await n('teams', { microsoftTeams: { microsoftTeamsUrl: `${hook.url}/teams` } }),
      await n('pd', { pagerduty: { routingKey: 'RK1' } }),
      await n('og', { opsgenie: { apiKey: 'og-key', isEU: false } }),
      await n('og-eu', { opsgenie: { apiKey: 'og-eu-key', isEU: true } }),
      await n('custom', {
        customWebhook: {
          url: `${hook.url}/custom`,
          body: '{"state":"{{.Action}}","value":{{.Value}},"groups":{{jsonArray .GroupValues}}}',
          headers: { 'X-Team': 'ops' },
          secretHeaders: { Authorization: 'Bearer s3' },
        },
      }),
      await n('mail', { email: { emails: ['oncall@example.com', 'lead@example.com'] } }),
    ];
    const snoozed = await post('/v2/notifiers', {
      name: 'snoozed',
      properties: { webhook: { url: `${hook.url}/snoozed` } },
      disabledUntil: '2099-01-01T00:00:00Z',
    });
    const { id, tick } = await monitor({
      name: 'channels',
      type: 'Threshold',
      aplQuery: "['t6'] | summarize count()",
      operator: 'Above',
      threshold: 0,
      notifierIds: [...ids, snoozed.id],
    });
    await ingest('t6', [{ _time: new Date(tick.at(1) - 5000).toISOString() }]);
    const before = hook.requests.length;
    await tick.run(1);
    const got = hook.requests.slice(before);
    const one = (p: string) => got.filter((r) => r.path.startsWith(p));
    expect(one('/slack/T1/B2')[0]!.json()).toEqual({
      text: expect.stringMatching(
        /^\*\[Triggered\] channels\*\nCurrent value of 1 is above the threshold value of 0\n/,
      ),
    });
    expect(one('/dwh/1/abc')[0]!.json().content).toMatch(/^\[Triggered\] channels\n/);
    const bot = one('/discord/api/v10/channels/123456/messages')[0]!;
    expect(bot.headers.authorization).toBe('Bot bot-tok');
    const teams = one('/teams')[0]!.json() as {
      type: string;
      attachments: { contentType: string; content: { type: string; body: { text?: string }[] } }[];
    };
    expect(teams.type).toBe('message');
    expect(teams.attachments[0]!.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(teams.attachments[0]!.content.body[0]!.text).toBe('[Triggered] channels');
    const pd = one('/pd/v2/enqueue')[0]!.json() as {
      routing_key: string;
      event_action: string;
      dedup_key: string;
      payload: { severity: string; source: string };
    };
    expect(pd).toMatchObject({
      routing_key: 'RK1',
      event_action: 'trigger',
      dedup_key: `${id}:`,
      payload: { severity: 'critical', source: 'ferry' },
    });
    const og = one('/og/v2/alerts')[0]!;
    expect(og.headers.authorization).toBe('GenieKey og-key');
    expect(og.json()).toMatchObject({ message: '[Triggered] channels', alias: `${id}:`, source: 'ferry' });
    expect(one('/og-eu/v2/alerts')[0]!.headers.authorization).toBe('GenieKey og-eu-key');
    const custom = one('/custom')[0]!;
    expect(custom.body).toBe('{"state":"Open","value":1,"groups":null}');
    expect(custom.headers).toMatchObject({
      'x-team': 'ops',
      authorization: 'Bearer s3',
      'content-type': 'application/json',
    });
    expect(one('/snoozed')).toHaveLength(0);
    expect(smtp.mails).toHaveLength(1);
    expect(smtp.mails[0]!).toMatchObject({ from: 'ferry@example.com', to: ['oncall@example.com', 'lead@example.com'] });
    expect(smtp.mails[0]!.data).toMatch(/Subject: \[Triggered\] channels/);
    expect(smtp.mails[0]!.data).toMatch(/Current value of 1 is above the threshold value of 0/);

    // Resolve: PagerDuty resolves the same incident, Opsgenie closes the alert by alias. A receiver that
    // answers 503 twice gets it on the third try; one that answers 400 is given up at once.
    const mid = hook.requests.length;
    const flaky = await httpReceiver();
    const refuse = await httpReceiver();
    try {
      const flakyId = await n('flaky', { webhook: { url: `${flaky.url}/flaky` } });
      const refuseId = await n('refuse', { webhook: { url: `${refuse.url}/refuse` } });
      const m = svc.alerting.monitors.get(id)!;
      expect(
        (await svc.call('PUT', `/v2/monitors/${id}`, { ...m, notifierIds: [...m.notifierIds, flakyId, refuseId] }))
          .status,
      ).toBe(200);
      flaky.failNext([503, 503]);
      refuse.failNext([400, 400, 400]);
      await tick.run(2);
      const closed = hook.requests.slice(mid);
      const pdResolve = closed.find((r) => r.path === '/pd/v2/enqueue')!.json();
      expect(pdResolve).toEqual({ routing_key: 'RK1', event_action: 'resolve', dedup_key: `${id}:` });
      expect(closed.find((r) => r.path.startsWith('/og/v2/alerts/'))!.path).toBe(
        `/og/v2/alerts/${encodeURIComponent(`${id}:`)}/close?identifierType=alias`,
      );
      expect(flaky.requests).toHaveLength(3);
      expect(flaky.requests[2]!.json().action).toBe('Closed');
      expect(refuse.requests).toHaveLength(1);
      const last = (await runs(id)).at(-1)!;
      expect(last).toMatchObject({ state: 'normal', notificationsFailed: 1 });
      expect(last.notificationError).toMatch(/^webhook notifier notify_\w+: the webhook answered 400/);
      // The failed delivery is what /health and /metrics show.
      expect(svc.alerting.health().lastNotificationFailure).toEqual({
        time: new Date(clock.t).toISOString(),
        monitorId: id,
        error: last.notificationError,
      });
      expect(renderMetrics(undefined, svc)).toMatch(/^ferry_monitor_notifications_total\{outcome="failed"\} [1-9]/m);

      // /v2/monitors/{id}/runs gives the cause to who may read notifiers, and only the count to others.
      const runsPath = `/v2/monitors/${id}/runs?startTime=2026-01-01T00:00:00Z&endTime=2027-01-01T00:00:00Z&limit=1`;
      const [latest] = (await (await svc.call('GET', runsPath)).json()) as Record<string, unknown>[];
      expect(latest).toMatchObject({ notificationsFailed: 1, notificationError: last.notificationError });
      const monitorReader = await svc.apiToken({ '*': { query: ['read'] } }, { monitors: ['read'] });
      const [blind] = (await (await svc.call('GET', runsPath, undefined, monitorReader)).json()) as Record<
        string,
        unknown
      >[];
      expect(blind).toMatchObject({ _time: latest!._time, notificationsFailed: 1, notificationError: null });

      // A PUT that leaves a secret header empty keeps its value: the receiver still gets it.
      const custom = ids[7]!;
      const view = (await (await svc.call('GET', `/v2/notifiers/${custom}`)).json()) as {
        name: string;
        properties: { customWebhook: Record<string, unknown> };
      };
      expect(view.properties.customWebhook.secretHeaders).toEqual({ Authorization: '' });
      view.properties.customWebhook.headers = { 'X-Team': 'sre' };
      expect((await svc.call('PUT', `/v2/notifiers/${custom}`, view)).status).toBe(200);
      const reopen = hook.requests.length;
      await ingest('t6', [{ _time: new Date(tick.at(3) - 5000).toISOString() }]);
      await tick.run(3);
      const again = hook.requests.slice(reopen).find((r) => r.path === '/custom')!;
      expect(again.headers).toMatchObject({ 'x-team': 'sre', authorization: 'Bearer s3' });
    } finally {
      await flaky.close();
      await refuse.close();
    }
  }, 30_000);

  it('monitors that read the same rows tick together and share one query; each judges it by its own threshold', async () => {
    const wh = await post('/v2/notifiers', { name: 'shared', properties: { webhook: { url: `${hook.url}/shared` } } });
    const query = "['t1'] | summarize count() by bin(_time, 1m)";
    const low = await monitor({
      name: 'low bar',
      type: 'Threshold',
      aplQuery: query,
      operator: 'Above',
      threshold: 2,
      notifierIds: [wh.id],
    });
    const high = await monitor({
      name: 'high bar',
      type: 'Threshold',
      aplQuery: query,
      operator: 'Above',
      threshold: 50,
      notifierIds: [wh.id],
    });
    expect(low.tick.at(1)).toBe(high.tick.at(1));
    await ingest(
      't1',
      Array.from({ length: 5 }, (_, i) => ({ _time: new Date(low.tick.at(7) - 10_000 + i).toISOString() })),
    );
    const { QueryEngine } = await import('../../../../src/service/query/engine.js');
    const execute = QueryEngine.prototype.execute;
    let executed = 0;
    QueryEngine.prototype.execute = function (
      this: InstanceType<typeof QueryEngine>,
      ...args: Parameters<typeof execute>
    ) {
      if (args[0].request.apl === query) executed++;
      return execute.apply(this, args);
    };
    try {
      clock.t = low.tick.at(7);
      await svc.alerting.scheduler.runDue();
    } finally {
      QueryEngine.prototype.execute = execute;
    }
    expect(executed).toBe(1);
    expect((await runs(low.id)).map((r) => r.state)).toEqual(['triggered']);
    expect((await runs(high.id)).map((r) => r.state)).toEqual(['normal']);
    expect(fromHook('/shared').map((r) => (r.json().event as { title: string }).title)).toEqual(['low bar']);
  });

  it("ferry monitors lists monitors with their state and last run, and shows one monitor's runs", async () => {
    const { id, tick } = await monitor({
      name: 'cli view',
      type: 'Threshold',
      aplQuery: "['t1'] | count",
      operator: 'Above',
      threshold: 1e9,
    });
    await tick.run(1);
    await tick.run(2);
    await svc.alerting.scheduler.runDue();
    // Asynchronously: the service answering the command runs in this process.
    const cli = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ['dist/src/cli/main.js', 'monitors', ...args, '--url', svc.url, '--token', ADMIN],
          { encoding: 'utf8', timeout: 30_000 },
          (err, stdout, stderr) => {
            resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
          },
        );
      });
    const listed = await cli();
    expect(listed.status, listed.stderr).toBe(0);
    const line = listed.stdout.split('\n').find((l) => l.startsWith(id))!;
    expect(line).toMatch(new RegExp(`^${id}\\s+cli view\\s+Threshold\\s+1m\\s+normal\\s+2026-03-01T00:02:`));
    expect(Date.parse(line.split(/\s{2,}/)[5]!)).toBe(tick.at(2));
    expect(listed.stdout).toMatch(/^id +name +type +every +state +last run +value +error\n/);
    const shown = await cli('show', id, '--runs', '1');
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`cli view (${id}), Threshold, every 1m over 1m: normal`);
    expect(shown.stdout).toContain("query: ['t1'] | count");
    expect(shown.stdout).toMatch(/recent runs:\ntime +state +value/);
    expect(shown.stdout).toContain('(1 row)');
    const missing = await cli('show', 'mon_nope');
    expect(missing).toMatchObject({
      status: 1,
      stderr: 'ferry: monitor mon_nope: monitor "mon_nope" not found (404)\n',
    });
    expect(await cli('frob')).toMatchObject({
      status: 2,
      stderr: 'ferry: unknown monitors command "frob" (list or show)\n',
    });
  });

  it('/v2/monitors/{id}/runs shows a run only to who may query what it read: runs from before the query changed stay hidden', async () => {
    for (const d of ['hr-runs', 'web-runs']) await svc.createDataset(d);
    const { id, tick } = await monitor({
      name: 'moved',
      type: 'Threshold',
      aplQuery: "['hr-runs'] | count",
      operator: 'Above',
      threshold: 1e9,
    });
    await tick.run(1);
    const m = svc.alerting.monitors.get(id)!;
    const put = await svc.call('PUT', `/v2/monitors/${id}`, { ...m, aplQuery: "['web-runs'] | count" });
    expect(put.status).toBe(200);
    await tick.run(2);
    await svc.alerting.scheduler.runLog.flush();
    // Years past what nanoseconds hold are the furthest they do, not a server error.
    const path = (limit = 10) =>
      `/v2/monitors/${id}/runs?startTime=1000-01-01T00:00:00Z&endTime=9999-12-31T00:00:00Z&limit=${limit}`;
    const times = async (token?: string) => {
      const r = await svc.call('GET', path(), undefined, token);
      expect(r.status).toBe(200);
      return ((await r.json()) as { _time: string; datasets: string[] }[]).map((x) => [x._time, x.datasets]);
    };
    const all = await times();
    expect(all.map(([, datasets]) => datasets)).toEqual([['web-runs'], ['hr-runs']]);
    expect(all[1]![0]).toBe(new Date(tick.at(1)).toISOString());
    const webOnly = await svc.apiToken({ 'web-runs': { query: ['read'] } }, { monitors: ['read'] });
    expect(await times(webOnly)).toEqual([all[0]]);
  });

  it('a monitor whose creator was deleted fails loudly: the run records why, /health and /metrics show it', async () => {
    const creator = await svc.apiToken(
      { t5: { query: ['read'] } },
      { monitors: ['create', 'read', 'update', 'delete'] },
    );
    clock.t = T0;
    const r = await svc.call(
      'POST',
      '/v2/monitors',
      {
        name: 'orphan',
        type: 'Threshold',
        aplQuery: "['t5'] | count",
        operator: 'Above',
        threshold: 1,
        intervalMinutes: 1,
        rangeMinutes: 1,
      },
      creator,
    );
    const id = ((await r.json()) as { id: string }).id;
    expect(r.status).toBe(200);
    const tick = ticks(id);
    clock.t = tick.at(0);
    await svc.alerting.scheduler.arm(svc.alerting.monitors.get(id)!);
    await tick.run(1);
    expect(svc.alerting.health().failing.map((f) => f.id)).not.toContain(id);

    const tokens = (await (await svc.call('GET', '/v2/tokens')).json()) as { id: string }[];
    const createdBy = svc.alerting.monitors.get(id)!.createdBy;
    expect(tokens.map((t) => t.id)).toContain(createdBy);
    expect((await svc.call('DELETE', `/v2/tokens/${createdBy}`)).status).toBe(204);
    await tick.run(2);
    const last = (await runs(id)).at(-1)!;
    expect(last).toMatchObject({
      state: 'error',
      error: `the user or API token that created this monitor (${createdBy}) was removed; re-create the monitor with a valid identity`,
    });
    expect(svc.alerting.health().failing).toContainEqual({
      id,
      name: 'orphan',
      error: last.error,
      since: new Date(tick.at(2)).toISOString(),
    });
    const metrics = renderMetrics(undefined, svc);
    expect(metrics).toMatch(/^ferry_monitors_failing [1-9]/m);
    expect(metrics).toMatch(/^ferry_monitor_run_errors_total [1-9]/m);
    expect((await svc.call('DELETE', `/v2/monitors/${id}`)).status).toBe(204);
    expect(svc.alerting.health().failing.map((f) => f.id)).not.toContain(id);
  });

  it('creates, updates, deletes and runs interleaved at random keep memory, disk and schedule in step (seeded)', async () => {
    const seed = Number(process.env.FERRY_MONITOR_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rnd = seededRandom(seed);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const body = (n: number) => ({
      name: `race ${n}`,
      type: 'Threshold',
      aplQuery: n % 2 ? "['t1'] | count" : "['t1'] | summarize count() by bin(_time, 1m)",
      operator: 'Above',
      threshold: n,
      intervalMinutes: 1,
      rangeMinutes: 1,
    });
    const live = new Set<string>();
    const statuses: string[] = [];
    clock.t = T0 + 40 * MIN;
    for (let wave = 0; wave < 12; wave++) {
      const ops: Promise<void>[] = [];
      for (let i = 0; i < 12; i++) {
        const r = rnd();
        const n = Math.floor(rnd() * 1000);
        if (r < 0.35 || live.size === 0) {
          ops.push(
            svc.call('POST', '/v2/monitors', body(n)).then(async (res) => {
              statuses.push(`POST ${res.status}`);
              if (res.status === 200) live.add(((await res.json()) as { id: string }).id);
            }),
          );
        } else if (r < 0.7) {
          const id = pick([...live]);
          ops.push(
            svc.call('PUT', `/v2/monitors/${id}`, body(n)).then((res) => {
              statuses.push(`PUT ${res.status === 404 && !live.has(id) ? 'gone' : res.status}`);
            }),
          );
        } else if (r < 0.85) {
          const id = pick([...live]);
          live.delete(id);
          ops.push(
            svc.call('DELETE', `/v2/monitors/${id}`).then((res) => {
              statuses.push(`DELETE ${res.status === 404 ? 'gone' : res.status}`);
            }),
          );
        } else {
          clock.t += Math.floor(rnd() * 2 * MIN);
          ops.push(svc.alerting.scheduler.runDue());
        }
      }
      await Promise.all(ops);
    }
    await svc.alerting.scheduler.runDue();
    const unexpected = statuses.filter((x) => !/^(POST 200|PUT (200|gone)|DELETE (204|gone))$/.test(x));
    expect(unexpected, `seed ${seed} (FERRY_MONITOR_SEED)`).toEqual([]);
    const race = (ids: string[]) => ids.filter((id) => svc.alerting.monitors.get(id)?.name.startsWith('race ')).sort();
    const before = race(svc.alerting.monitors.list().map((m) => m.id));
    expect(before, `seed ${seed}`).toEqual([...live].sort());
    const docs = new Map(before.map((id) => [id, svc.alerting.monitors.get(id)]));
    // No state outlives its monitor, and each monitor has one.
    const states = svc.alerting.states.list().map((st) => st.id);
    expect(
      states.filter((id) => !svc.alerting.monitors.has(id)),
      `seed ${seed}`,
    ).toEqual([]);
    expect(
      before.filter((id) => !svc.alerting.states.has(id)),
      `seed ${seed}`,
    ).toEqual([]);

    await svc.close();
    await start();
    expect(race(svc.alerting.monitors.list().map((m) => m.id)), `seed ${seed}`).toEqual(before);
    for (const [id, doc] of docs) expect(svc.alerting.monitors.get(id), `seed ${seed}`).toEqual(doc);
    expect(
      svc.alerting.states
        .list()
        .filter((st) => !svc.alerting.monitors.has(st.id))
        .map((st) => st.id),
      `seed ${seed}`,
    ).toEqual([]);
    for (const id of before) await svc.call('DELETE', `/v2/monitors/${id}`);
  }, 60_000);
});
