/**
 * E-mail notifiers without an SMTP server: accepted, their mail held in an outbox file in the data
 * directory, counted in /health and /metrics and shown as not sent in the monitor's history, then sent once
 * a server is configured: on SIGHUP (service.notifiers.smtp reloaded) or at the next start.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../../../src/cli/config.js';
import { renderMetrics } from '../../../../src/agent/metrics.js';
import { tickPhaseMs } from '../../../../src/service/monitors/scheduler.js';
import { reloadSmtp } from '../../../../src/service/smtp-reload.js';
import { smtpReceiver } from '../../../support/monitor-receivers.js';
import { ADMIN, startTestService, tempDir, type TestService, walkingClock } from '../../../support/helpers.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;
const clock = walkingClock(T0);
let smtp: Awaited<ReturnType<typeof smtpReceiver>>;
let svc: TestService;
const dir = tempDir();

beforeAll(async () => {
  smtp = await smtpReceiver();
  const cfg = buildConfig({ service: { monitors: { enabled: false } } }, {});
  svc = await startTestService({ monitors: cfg.service.monitors, notifiers: cfg.service.notifiers }, dir, { clock });
});
afterAll(async () => {
  await svc?.stop();
  await smtp?.close();
});

/** What SIGHUP does with service.notifiers.smtp, pointing at the test's SMTP receiver. */
const setSmtp = (service: TestService) =>
  reloadSmtp(
    service,
    { host: '127.0.0.1', port: smtp.port, secure: false, starttls: 'off', from: 'ferry@example.com' },
    pino({ level: 'silent' }),
  );

describe('the mail outbox', () => {
  it('holds mail while no SMTP server is set, says so everywhere, and sends it once one is configured', async () => {
    await svc.createDataset('app');
    const token = await svc.apiToken({ app: { ingest: ['create'] } });
    const mail = await svc.call('POST', '/v2/notifiers', {
      name: 'oncall',
      properties: { email: { emails: ['oncall@example.com'] } },
    });
    const notifier = (await mail.json()) as { id: string };
    expect(mail.status, JSON.stringify(notifier)).toBe(200);
    await svc.call('POST', '/v1/ingest/app', [{ _time: new Date(T0).toISOString(), level: 'error' }], token);
    clock.t = T0;
    const m = (await (
      await svc.call('POST', '/v2/monitors', {
        name: 'errors',
        type: 'Threshold',
        aplQuery: "['app'] | summarize count() by bin(_time, 1m)",
        operator: 'Above',
        threshold: 0,
        intervalMinutes: 1,
        rangeMinutes: 5,
        notifierIds: [notifier.id],
      })
    ).json()) as { id: string };
    const phase = tickPhaseMs(svc.alerting.monitors.get(m.id)!);
    clock.t = T0 + phase;
    await svc.alerting.scheduler.arm(svc.alerting.monitors.get(m.id)!);
    clock.t = T0 + MIN + phase;
    await svc.alerting.scheduler.runDue();

    // Not sent, and said so: the monitor's runs, /health's alerting, /metrics and the file in the data directory.
    await svc.alerting.scheduler.runLog.flush();
    const r = await svc.call('POST', '/v1/query/_apl?format=legacy', {
      apl: `['ferry-monitor-runs'] | where monitorId == '${m.id}'`,
      startTime: '2020-01-01T00:00:00Z',
      endTime: '2030-01-01T00:00:00Z',
    });
    const run = ((await r.json()) as { matches: { data: Record<string, unknown> }[] }).matches[0]!.data;
    expect(run, JSON.stringify(run)).toMatchObject({ state: 'triggered', notified: 0, notificationsFailed: 1 });
    expect(run.notificationError).toMatch(/not sent: no SMTP server is configured .*kept in the outbox/);
    const health = svc.alerting.health();
    expect(health.outbox).toMatchObject({ mails: 1, path: join(dir, 'outbox', 'mail.ndjson') });
    expect(health.lastNotificationFailure?.error).toMatch(/kept in the outbox/);
    expect(renderMetrics(undefined, svc)).toMatch(/^ferry_notifier_outbox_mails 1$/m);
    const held = readFileSync(join(dir, 'outbox', 'mail.ndjson'), 'utf8')
      .trim()
      .split('\n');
    expect(held).toHaveLength(1);
    expect(JSON.parse(held[0]!)).toMatchObject({ to: ['oncall@example.com'], subject: '[Triggered] errors' });
    expect(smtp.mails).toHaveLength(0);

    // The server arrives (what SIGHUP does with service.notifiers.smtp): the held mail goes out.
    await setSmtp(svc);
    // Sent in the background: the reload does not wait for the server.
    for (let i = 0; i < 100 && svc.alerting.outbound.outbox.count > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(smtp.mails).toHaveLength(1);
    expect(smtp.mails[0]!).toMatchObject({ from: 'ferry@example.com', to: ['oncall@example.com'] });
    expect(smtp.mails[0]!.data).toMatch(/Subject: \[Triggered\] errors/);
    expect(svc.alerting.health().outbox).toBeUndefined();
    expect(existsSync(join(dir, 'outbox', 'mail.ndjson'))).toBe(false);
    expect(renderMetrics(undefined, svc)).toMatch(/^ferry_notifier_outbox_mails 0$/m);
  });

  it('a held mail goes where its notifier says when it is sent, and not at all once the notifier or monitor is gone', async () => {
    const fresh = await startTestService(
      { monitors: buildConfig({ service: { monitors: { enabled: false } } }, {}).service.monitors },
      undefined,
      { clock },
    );
    try {
      await fresh.createDataset('app');
      const token = await fresh.apiToken({ app: { ingest: ['create'] } });
      const notifier = async (emails: string[]) =>
        (
          (await (
            await fresh.call('POST', '/v2/notifiers', { name: emails[0], properties: { email: { emails } } })
          ).json()) as {
            id: string;
          }
        ).id;
      const kept = await notifier(['old@example.com']);
      const gone = await notifier(['gone@example.com']);
      const monitorOf = async (name: string, notifierId: string) => {
        clock.t = T0;
        const m = (await (
          await fresh.call('POST', '/v2/monitors', {
            name,
            type: 'MatchEvent',
            aplQuery: "['app'] | where level == 'error'",
            intervalMinutes: 1,
            rangeMinutes: 5,
            notifierIds: [notifierId],
          })
        ).json()) as { id: string };
        const phase = tickPhaseMs(fresh.alerting.monitors.get(m.id)!);
        clock.t = T0 + phase;
        await fresh.alerting.scheduler.arm(fresh.alerting.monitors.get(m.id)!);
        return { id: m.id, phase };
      };
      const a = await monitorOf('readdressed', kept);
      const b = await monitorOf('orphaned', gone);
      await fresh.call(
        'POST',
        '/v1/ingest/app',
        [{ _time: new Date(T0 + 30_000).toISOString(), level: 'error' }],
        token,
      );
      clock.t = T0 + MIN + Math.max(a.phase, b.phase);
      await fresh.alerting.scheduler.runDue();
      expect(fresh.alerting.outbound.outbox.count).toBe(2);
      // Meanwhile the admin points one notifier elsewhere and deletes the other.
      const put = await fresh.call('PUT', `/v2/notifiers/${kept}`, {
        name: 'new',
        properties: { email: { emails: ['new@example.com'] } },
      });
      expect(put.status).toBe(200);
      expect((await fresh.call('DELETE', `/v2/notifiers/${gone}`)).status).toBe(204);
      const before = smtp.mails.length;
      await setSmtp(fresh);
      for (let i = 0; i < 100 && fresh.alerting.outbound.outbox.count > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      const got = smtp.mails.slice(before);
      expect(got.map((m) => m.to)).toEqual([['new@example.com']]);
      expect(fresh.alerting.outbound.outbox.count).toBe(0);
    } finally {
      await fresh.stop();
    }
  });

  it('bounds the outbox: a mail past the size cut says so, and a file too large to read is moved aside at start', async () => {
    const { MailOutbox, MAX_HELD_TEXT_BYTES, MAX_OUTBOX_BYTES } =
      await import('../../../../src/service/notifiers/outbox.js');
    const where = join(tempDir(), 'outbox', 'mail.ndjson');
    const box = MailOutbox.open(where);
    expect(
      await box.hold(
        { to: ['a@example.com'], subject: 's', text: 'x'.repeat(MAX_HELD_TEXT_BYTES * 2) },
        new Date().toISOString(),
      ),
    ).toBe(true);
    const line = readFileSync(where, 'utf8');
    expect(line.length).toBeLessThan(MAX_HELD_TEXT_BYTES + 1000);
    expect(line).toContain('cut: the mail was longer than');
    // Filling it: holds are refused before the file passes its cap.
    let held = 1;
    while (
      await box.hold(
        { to: ['a@example.com'], subject: 's', text: 'y'.repeat(MAX_HELD_TEXT_BYTES) },
        new Date().toISOString(),
      )
    )
      held++;
    expect(held).toBeLessThan(MAX_OUTBOX_BYTES / MAX_HELD_TEXT_BYTES + 2);
    expect(statSync(where).size).toBeLessThanOrEqual(MAX_OUTBOX_BYTES);
    // A file made by hand, larger than Ferry writes, is not read: moved aside, the outbox empty.
    writeFileSync(where, 'z'.repeat(2 * MAX_OUTBOX_BYTES + 1));
    const reopened = MailOutbox.open(where);
    expect(reopened.count).toBe(0);
    expect(reopened.movedAside).toMatch(/mail\.ndjson\.too-large-\d+$/);
    expect(existsSync(reopened.movedAside!)).toBe(true);
  });

  it('setting an SMTP server that never answers returns at once: held mail goes out in the background', async () => {
    const { outbound } = await import('../../../../src/service/notifiers/outbound.js');
    const sockets: Socket[] = [];
    const silent = createServer((sock) => void sockets.push(sock)); // accepts, never greets
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const cfg = buildConfig({ service: { notifiers: { timeout: '30s' } } }, {}).service.notifiers;
    const out = outbound(cfg, { path: join(tempDir(), 'outbox', 'mail.ndjson'), resolve: (m) => m });
    try {
      for (const to of ['a@example.com', 'b@example.com'])
        await out.mail({ to: [to], subject: 's', text: 't' }).catch(() => undefined);
      expect(out.outbox.count).toBe(2);
      const port = (silent.address() as AddressInfo).port;
      await out.setSmtp({ host: '127.0.0.1', port, secure: false, starttls: 'off', from: 'f@example.com' });
      // Returned while the first mail still waits for the greeting: the reload was not held up.
      expect(out.outbox.count).toBe(2);
    } finally {
      for (const sock of sockets) sock.destroy();
      silent.close();
      await out.close();
    }
  });

  it('ferry serve sends what the outbox held once SIGHUP brings an SMTP server, and says how many', async () => {
    const data = tempDir();
    mkdirSync(join(data, 'outbox'), { recursive: true });
    const mail = {
      at: new Date().toISOString(),
      to: ['night@example.com'],
      subject: '[Triggered] disk',
      text: 'full\n',
    };
    writeFileSync(join(data, 'outbox', 'mail.ndjson'), `${JSON.stringify(mail)}\n`);
    const config = join(data, 'ferry.yaml');
    const base = `service:\n  listen: 127.0.0.1:0\n  data_dir: ${data}\n  memory_limit: 256MB\n`;
    writeFileSync(config, base);
    const child = spawn(process.execPath, ['dist/src/cli/main.js', 'serve', '-c', config], {
      env: { ...process.env, FERRY_ADMIN_TOKEN: ADMIN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const until = async (what: string, cond: () => boolean) => {
      for (let i = 0; i < 300 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(cond(), `${what}: ${out}`).toBe(true);
    };
    try {
      await until('listening', () => out.includes('event service listening'));
      const before = smtp.mails.length;
      writeFileSync(
        config,
        `${base}  notifiers:\n    smtp: { host: 127.0.0.1, port: ${smtp.port}, from: ferry@example.com, starttls: "off" }\n`,
      );
      child.kill('SIGHUP');
      await until('the held mail sent', () => smtp.mails.length > before);
      expect(smtp.mails.at(-1)!).toMatchObject({ to: ['night@example.com'] });
      await until('the reload logged', () => out.includes('service.notifiers.smtp reloaded'));
      await until('the flush logged', () => out.includes('mail held in the outbox: sent through the SMTP server'));
      expect(out).toMatch(/"sent":1,"kept":0,"setAside":0/);
      expect(existsSync(join(data, 'outbox', 'mail.ndjson'))).toBe(false);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
