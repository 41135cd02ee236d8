/**
 * The syslog source with real senders: util-linux `logger` over UDP and TCP (newline and octet-counted
 * framing, RFC 5424 with structured data, RFC 3164), Node's TLS client, malformed and oversized messages,
 * back-pressure on TCP and drops on UDP.
 */
import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { PARSE_ERROR, SyslogSource, type SyslogSettings } from '../../../../src/agent/sources/syslog.js';
import type { SourceLine } from '../../../../src/agent/sources/source.js';
import { startAgent, startReceiver, stopAgentsAndReceivers } from '../../../support/agent-process.js';
import { tempDir } from '../../../support/helpers.js';

const settings = (extra: Partial<SyslogSettings> = {}): SyslogSettings => ({
  mode: 'tcp',
  address: { host: '127.0.0.1', port: 0 },
  framing: 'auto',
  maxMessageBytes: 64 * 1024,
  maxConnections: 16,
  idleTimeoutMs: 60_000,
  rfc: 'auto',
  timezone: 'UTC',
  ...extra,
});

const running: SyslogSource[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
  await stopAgentsAndReceivers();
});

interface Run {
  source: SyslogSource;
  lines: SourceLine[];
  events(): Record<string, unknown>[];
  /** While set, the pipeline is full: emit waits. */
  block(): () => void;
}

/** @param decoded whether a transform reads the events (they come as text), or not (as bytes, for the sinks) */
async function listen(s: SyslogSettings, decoded = true): Promise<Run> {
  const source = new SyslogSource('net', s, { info: () => undefined, warn: () => undefined }, undefined, decoded);
  running.push(source);
  const lines: SourceLine[] = [];
  let gate: Promise<void> | undefined;
  await source.start((l) => {
    lines.push(l);
    return gate;
  });
  return {
    source,
    lines,
    events: () =>
      lines.map((l) => {
        // As bytes exactly when no transform reads them.
        expect(l.raw === undefined).toBe(decoded);
        return JSON.parse(l.raw ? l.raw.toString('utf8') : l.text) as Record<string, unknown>;
      }),
    block() {
      let open!: () => void;
      gate = new Promise<void>((r) => (open = r));
      return () => {
        gate = undefined;
        open();
      };
    },
  };
}

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function logger(port: number, ...args: string[]): void {
  const r = spawnSync('logger', ['--server', '127.0.0.1', '--port', String(port), ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`logger failed: ${r.stderr || r.error?.message}`);
}

describe('the syslog source', () => {
  for (const [decoded, as] of [
    [true, 'text'],
    [false, 'bytes'],
  ] as const) {
    it(`takes RFC 5424 over UDP from logger, structured data and the sender as fields (events as ${as})`, async () => {
      const r = await listen(settings({ mode: 'udp' }), decoded);
      logger(
        r.source.port,
        '--udp',
        '--rfc5424',
        '--sd-id',
        'origin@32473',
        '--sd-param',
        'ip="10.0.0.5"',
        '--msgid',
        'ID47',
        '-t',
        'myapp',
        '-p',
        'local0.warning',
        'hello over udp',
      );
      await until('1 event', () => r.lines.length === 1);
      const [e] = r.events();
      expect(e).toMatchObject({
        message: 'hello over udp',
        appname: 'myapp',
        msgid: 'ID47',
        'sd.origin@32473.ip': '10.0.0.5',
        severity: 'warning',
        facility: 'local0',
        'client.address': '127.0.0.1',
        'client.port': expect.any(Number),
      });
      expect(e!._time).toEqual(expect.any(String));
      expect(r.lines[0]!.structured).toBe(true);
    });

    it(`takes TCP with newline and octet-counted framing, RFC 3164 and RFC 5424, from logger (events as ${as})`, async () => {
      const r = await listen(settings(), decoded);
      logger(r.source.port, '--tcp', '--rfc3164', '-t', 'sshd', 'newline framed 3164');
      logger(r.source.port, '--tcp', '--octet-count', '--rfc5424', '-t', 'cron', 'octet counted 5424\nwith a newline');
      await until('2 events', () => r.lines.length === 2);
      const byApp = Object.fromEntries(r.events().map((e) => [e.appname, e]));
      expect(byApp.sshd).toMatchObject({ message: 'newline framed 3164', 'client.address': '127.0.0.1' });
      expect(byApp.cron).toMatchObject({ message: 'octet counted 5424\nwith a newline' });
    });

    it(`keeps a malformed message with parse_error, and cuts an oversized one, marking it (events as ${as})`, async () => {
      const r = await listen(settings({ maxMessageBytes: 40 }), decoded);
      const c = connect(r.source.port, '127.0.0.1');
      c.end(
        `not syslog at all\n<13>Nov 23 19:05:01 host app: ${'y'.repeat(200)}\n<13>Nov 23 19:05:02 host app: after\n`,
      );
      await until('3 events', () => r.lines.length === 3);
      const [bad, long, after] = r.events();
      expect(bad).toMatchObject({ message: 'not syslog at all', parse_error: PARSE_ERROR });
      expect(long).toMatchObject({ appname: 'app', truncated: true });
      expect(after).toMatchObject({ message: 'after' });
      expect(r.source.counters).toMatchObject({ parseErrors: 1, truncatedLines: 1 });
    });

    it(`stops reading a TCP sender while the pipeline is full and loses nothing once it has room (events as ${as})`, async () => {
      const r = await listen(settings(), decoded);
      const open = r.block();
      const c = connect(r.source.port, '127.0.0.1');
      const n = 20_000;
      const body = Array.from(
        { length: n },
        (_, i) => `<13>Nov 23 19:05:01 host app: message ${i} ${'p'.repeat(200)}\n`,
      ).join('');
      c.write(body);
      await new Promise((res) => setTimeout(res, 500));
      // One message is being handed on; the rest waits in the socket buffers, unread.
      expect(r.lines.length).toBe(1);
      expect(c.writableLength).toBeGreaterThan(0);
      open();
      c.end();
      await until(`${n} events`, () => r.lines.length === n);
      expect(r.events().map((e) => Number(String(e.message).split(' ')[1]))).toEqual(
        Array.from({ length: n }, (_, i) => i),
      );
    });
  }

  it("counts UDP datagrams dropped while the pipeline was full, its own and the kernel's, and says so in /health", async () => {
    const r = await listen(settings({ mode: 'udp' }));
    const open = r.block();
    const sock = createSocket('udp4');
    const n = 30_000;
    try {
      const send = (m: string) => new Promise<void>((res) => sock.send(m, r.source.port, '127.0.0.1', () => res()));
      for (let i = 0; i < n; i++) await send(`<13>Nov 23 19:05:01 host app: d${i} ${'p'.repeat(100)}`);
      await until('the drops', () => r.source.dropped > 0);
      expect(r.source.status().warnings[0]).toMatch(/UDP datagram\(s\) dropped since start/);
      expect(r.source.status().degraded).toBe(true);
      expect(r.source.gauges().find((g) => g.name === 'ferry_source_syslog_dropped_total')!.value).toBeGreaterThan(0);
    } finally {
      open();
      sock.close();
    }
    // Every datagram sent is either an event or counted as dropped.
    await until('every datagram accounted for', () => r.lines.length + r.source.dropped === n);
  });

  it('closes a connection that says nothing, and stops at once with a TLS client stuck before its handshake', async () => {
    const r = await listen(settings({ idleTimeoutMs: 200 }));
    const quiet = connect(r.source.port, '127.0.0.1');
    const closed = await new Promise<boolean>((res) => {
      quiet.once('close', () => res(true));
      setTimeout(() => res(false), 5000);
    });
    expect(closed).toBe(true);
    const pem = (f: string) => new URL(`../../../support/fixtures/tls/${f}`, import.meta.url).pathname;
    const tls = await listen(settings({ tls: { certFile: pem('cert.pem'), keyFile: pem('key.pem') } }));
    const stuck = connect(tls.source.port, '127.0.0.1'); // never says ClientHello
    stuck.on('error', () => undefined);
    await new Promise((res) => setTimeout(res, 100));
    const stopped = await Promise.race([
      tls.source.stop().then(() => true),
      new Promise<boolean>((res) => setTimeout(() => res(false), 5000)),
    ]);
    expect(stopped).toBe(true);
  });

  it('reads structured data of any length in time linear in it', async () => {
    const r = await listen(settings());
    const c = connect(r.source.port, '127.0.0.1');
    // No `=` in a megabyte-long element: a pattern that tried every position took minutes.
    const element = `[x ${'a'.repeat(1 << 20)}]`;
    c.end(
      `<13>1 2026-11-26T10:00:00Z h app - - ${element} after\n<13>1 2026-11-26T10:00:00Z h app - - [a@1 k="v"] ok\n`,
    );
    await until('2 events', () => r.lines.length === 2, 20_000);
    expect(r.events()[1]).toMatchObject({ 'sd.a@1.k': 'v', message: 'ok' });
  });

  it('takes TCP with TLS, and refuses a client without a certificate when a CA is set', async () => {
    const pem = (f: string) => new URL(`../../../support/fixtures/tls/${f}`, import.meta.url).pathname;
    const tls = { certFile: pem('cert.pem'), keyFile: pem('key.pem') };
    const r = await listen(settings({ tls }));
    const message = '<13>Nov 23 19:05:01 h a: over tls';
    const c = tlsConnect({ port: r.source.port, host: '127.0.0.1', ca: [readFileSync(pem('cert.pem'))] });
    await new Promise<void>((res, rej) => {
      c.once('secureConnect', () => res());
      c.once('error', rej);
    });
    c.end(`${Buffer.byteLength(message)} ${message}`);
    await until('1 event', () => r.lines.length === 1);
    expect(r.events()[0]).toMatchObject({ message: 'over tls', hostname: 'h' });

    // With client certificates required, a client without one gets no further than the handshake.
    const strict = await listen(settings({ tls: { ...tls, caFile: pem('cert.pem') } }));
    const anon = tlsConnect({ port: strict.source.port, host: '127.0.0.1', ca: [readFileSync(pem('cert.pem'))] });
    const failed = await new Promise<boolean>((res) => {
      anon.once('error', () => res(true));
      anon.once('close', () => res(true));
      anon.once('secureConnect', () => anon.write('<13>Nov 23 19:05:01 h a: sneaked in\n', () => undefined));
      setTimeout(() => res(false), 3000);
    });
    expect(failed).toBe(true);
    await new Promise((res) => setTimeout(res, 200));
    expect(strict.lines).toHaveLength(0);
  });

  it('through the agent: logger over TCP to a sink, with the source in /metrics', async () => {
    const dir = tempDir('ferry-syslog-');
    const receiver = await startReceiver();
    const config = join(dir, 'agent.yaml');
    writeFileSync(
      config,
      `agent: { data_dir: ${join(dir, 'state')}, api: { listen: "127.0.0.1:0" } }
service: { enabled: false }
sources:
  net: { type: syslog, mode: tcp, address: "127.0.0.1:0" }
sinks:
  out: { type: axiom, inputs: [net], dataset: d, url: "${receiver.url}", token: t, batch: { timeout: 50ms } }
`,
    );
    const agent = startAgent(config);
    const started = await agent.waitLog('source started: listening for syslog');
    const port = Number(String(started.address).split(':')[1]);
    const api = (await agent.waitLog('agent running')).api as string;
    for (let i = 0; i < 5; i++) logger(port, '--tcp', '--rfc5424', '-t', 'web', `request ${i}`);
    await until('5 events', () => receiver.events.length === 5);
    expect(receiver.events.map((e) => e.message).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `request ${i}`));
    const metrics = await (await fetch(`${api}/metrics`)).text();
    expect(metrics).toContain('ferry_source_lines_total{source="net"} 5');
    expect(metrics).toContain('ferry_source_syslog_connections_total{source="net"} 5');
    agent.child.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });
});
