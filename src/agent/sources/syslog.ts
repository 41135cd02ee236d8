/**
 * The `syslog` source: syslog over the network from devices and daemons, on UDP, TCP, or TCP with TLS.
 * Messages are RFC 5424 or RFC 3164 (the syslog parser's), framed on TCP by newlines or octet counts
 * (RFC 6587); each becomes an event with the parsed fields, structured data as `sd.<id>.<name>`, and the
 * sender's `client.address` and `client.port`. A message that is neither RFC keeps its text in `message`
 * with `parse_error` saying so: nothing is dropped silently.
 *
 * TCP is read only as fast as the pipeline takes events: while a batch waits for room in the queue, the
 * connection is not read, and the sender's writes wait in the kernel's buffers (back-pressure, never a
 * drop). Syslog has no acknowledgements, so what a sender wrote before the agent died in the middle of
 * reading it is lost with the connection, as with any syslog receiver. UDP cannot wait: datagrams that
 * arrive while the pipeline is full are held up to a bound, then dropped and counted.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { bytes, duration, int, listen, oneOf, optionalGroup, str, type OptionSpecs } from '../../config/options.js';
import { NowAndThen } from '../../util/now-and-then.js';
import { SYSLOG_OPTIONS as SYSLOG_PARSER_OPTIONS, SyslogParser } from '../parsers/syslog.js';
import { SyslogFramer, type Framing } from './syslog-framing.js';
import { PARSE_ERROR, senderSuffix, syslogEvent, SyslogEventWriter } from './syslog-event.js';
import {
  newSourceCounters,
  type Gauge,
  type Source,
  type SourceCounters,
  type SourceLine,
  type SourceSpec,
  type SourceStatus,
  type Stream,
} from './source.js';

export interface SyslogSettings {
  mode: 'udp' | 'tcp';
  address: { host: string; port: number };
  framing: Framing;
  maxMessageBytes: number;
  maxConnections: number;
  /** A TCP connection that sends nothing for this long is closed (it holds a slot of max_connections). */
  idleTimeoutMs: number;
  tls?: { certFile: string; keyFile: string; caFile?: string };
  rfc: '3164' | '5424' | 'auto';
  timezone: string;
}

export interface SyslogCounters extends SourceCounters {
  connections: number;
  dropped: number;
  parseErrors: number;
  refusedConnections: number;
}

export function newSyslogCounters(): SyslogCounters {
  return { ...newSourceCounters(), connections: 0, dropped: 0, parseErrors: 0, refusedConnections: 0 };
}

/** Datagrams held while the pipeline is full, before new ones are dropped: so many, or so many bytes. */
const UDP_BACKLOG = 10_000;
const UDP_BACKLOG_BYTES = 64 * 1024 * 1024;
/** Drops this recent make the source degraded in /health. */
const RECENT_DROPS_MS = 10 * 60_000;
/** A TLS client that has not finished its handshake by then is let go. */
const TLS_HANDSHAKE_MS = 10_000;

/** An address as /proc/net/udp[6] writes it: hex, each 32-bit word in the host's (little-endian) order. */
export function procAddress(address: string): string {
  const words = (bytes: number[]) =>
    Array.from({ length: bytes.length / 4 }, (_, w) =>
      bytes
        .slice(w * 4, w * 4 + 4)
        .reverse()
        .map((b) => b.toString(16).toUpperCase().padStart(2, '0'))
        .join(''),
    ).join('');
  if (!address.includes(':')) return words(address.split('.').map(Number));
  const [head = '', tail = ''] = address.split('::');
  const part = (s: string) => (s ? s.split(':') : []);
  const groups = [...part(head), ...Array<string>(8 - part(head).length - part(tail).length).fill('0'), ...part(tail)];
  return words(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 255]));
}

export { PARSE_ERROR, senderSuffix, syslogEvent };

/** Whom a message came from: the end of its event, as text and as bytes. */
interface Sender {
  text: string;
  bytes: Buffer;
}

function sender(address: string, port: number): Sender {
  const text = senderSuffix(address, port);
  return { text, bytes: Buffer.from(text) };
}

export class SyslogSource implements Source {
  readonly counters: SyslogCounters;
  private readonly stream: Stream;
  private readonly parser: SyslogParser;
  private offset = 0;
  private server: Server | undefined;
  private udp: UdpSocket | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly raw = new Set<Socket>();
  private readonly handshakeFailures = new NowAndThen();
  /** Bytes of the datagrams held (the batch being handed on included). */
  private udpHeldBytes = 0;
  /** The kernel's drop count of this socket when last read. */
  private kernelSeen = 0;
  private stopping = false;
  private readonly reading = new Set<Promise<void>>();
  /** UDP datagrams waiting for the pipeline, and whether one is being handed on. */
  private udpBacklog: { bytes: Buffer; truncated: boolean; sender: Sender; held: number }[] = [];
  /** Events of UDP datagrams as bytes (one for every sender: the header it reuses is the last datagram's). */
  private readonly udpWriter: SyslogEventWriter;
  private udpDraining: Promise<void> | undefined;
  private lastDropAt = 0;
  private emit!: (l: SourceLine) => Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly s: SyslogSettings,
    private readonly log: { info(o: object, m: string): void; warn(o: object, m: string): void },
    counters?: SyslogCounters,
    /**
     * Whether a transform reads the events: if so they are made as text (and parsed again by no one); if
     * not, as bytes straight from the frames (the sinks ship them as they are).
     */
    private readonly decoded = true,
  ) {
    this.counters = counters ?? newSyslogCounters();
    this.parser = new SyslogParser(s.rfc, undefined, s.timezone);
    this.udpWriter = new SyslogEventWriter(this.parser);
    // Syslog has no acknowledgements: a message is the agent's once it is read.
    this.stream = { id: `${name}:syslog`, source: name, acknowledge: () => undefined };
  }

  /** The port listened on (the configured one, or the one given for port 0). */
  port = 0;

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.emit = emit;
    const { host, port } = this.s.address;
    if (this.s.mode === 'udp') {
      // A large receive buffer rides out bursts (the kernel caps it at net.core.rmem_max).
      const udp = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 8 * 1024 * 1024 });
      this.udp = udp;
      udp.on('message', (msg, rinfo) => this.datagram(msg, rinfo.address, rinfo.port));
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(port, host, () => {
          udp.off('error', reject);
          resolve();
        });
      });
      udp.on('error', (e) => this.log.warn({ source: this.name, err: e }, 'syslog UDP socket problem'));
      this.port = udp.address().port;
    } else {
      const tls = this.s.tls;
      const server = tls
        ? createTlsServer(
            {
              cert: readFileSync(tls.certFile),
              key: readFileSync(tls.keyFile),
              handshakeTimeout: TLS_HANDSHAKE_MS,
              ...(tls.caFile ? { ca: readFileSync(tls.caFile), requestCert: true, rejectUnauthorized: true } : {}),
            },
            (socket) => this.connection(socket),
          )
        : createServer((socket) => this.connection(socket));
      server.maxConnections = this.s.maxConnections;
      // Every connection as it is accepted, before any TLS handshake: stop() closes them all.
      server.on('connection', (raw: Socket) => {
        this.raw.add(raw);
        raw.once('close', () => this.raw.delete(raw));
      });
      server.on('drop', () => this.counters.refusedConnections++);
      server.on('tlsClientError', (e) =>
        this.handshakeFailures.hit((count) =>
          this.log.warn({ source: this.name, err: e.message, count }, 'TLS handshakes failed (the last error shown)'),
        ),
      );
      this.server = server;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      this.port = (server.address() as { port: number }).port;
    }
    this.log.info(
      { source: this.name, mode: this.s.tls ? 'tcp+tls' : this.s.mode, address: `${host}:${this.port}` },
      'source started: listening for syslog',
    );
  }

  private connection(socket: Socket): void {
    if (this.stopping) {
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    this.counters.connections++;
    const done = this.read(socket).finally(() => {
      this.sockets.delete(socket);
      this.reading.delete(done);
    });
    this.reading.add(done);
  }

  /** Reads one connection to its end; while the pipeline is full the socket is not read (back-pressure). */
  private async read(socket: Socket): Promise<void> {
    const from = sender(socket.remoteAddress ?? '', socket.remotePort ?? 0);
    const writer = new SyslogEventWriter(this.parser);
    const framer = new SyslogFramer(this.s.framing, this.s.maxMessageBytes);
    socket.on('error', () => undefined); // a reset ends the iteration below
    // A connection that says nothing for idle_timeout gives its slot back (not while the pipeline makes it wait).
    let waiting = false;
    socket.setTimeout(this.s.idleTimeoutMs, () => {
      if (!waiting) socket.destroy();
    });
    try {
      for await (const chunk of socket as AsyncIterable<Buffer>) {
        for (const f of framer.push(chunk)) {
          const wait = this.message(f.bytes, f.truncated, from, writer);
          if (wait) {
            waiting = true;
            await wait;
            waiting = false;
          }
        }
      }
      const last = framer.end();
      if (last) await this.message(last.bytes, last.truncated, from, writer);
    } catch {
      // The connection was reset: what was read is handed on; the rest is the sender's.
    }
  }

  /** Hands a message on; a promise only when the pipeline is full (wait before reading more). */
  private message(
    bytes: Buffer,
    truncated: boolean,
    from: Sender,
    writer: SyslogEventWriter,
  ): Promise<void> | undefined {
    let text = '';
    const raw = this.decoded ? undefined : writer.write(bytes, truncated, from.bytes);
    let parsed = writer.parsed;
    if (!raw) ({ event: text, parsed } = syslogEvent(this.parser, bytes.toString('utf8'), truncated, from.text));
    this.offset++;
    this.counters.linesIn++;
    this.counters.bytesIn += bytes.length + 1;
    if (truncated) this.counters.truncatedLines++;
    if (!parsed) this.counters.parseErrors++;
    return this.emit({
      text,
      raw,
      truncated: false,
      structured: true,
      stream: this.stream,
      offset: this.offset,
      generation: 0,
    });
  }

  private datagram(msg: Buffer, address: string, port: number): void {
    if (this.stopping) return;
    const truncated = msg.length > this.s.maxMessageBytes;
    let bytes = msg.subarray(0, Math.min(msg.length, this.s.maxMessageBytes));
    if (bytes[bytes.length - 1] === 10) bytes = bytes.subarray(0, bytes[bytes.length - 2] === 13 ? -2 : -1);
    if (this.udpBacklog.length >= UDP_BACKLOG || this.udpHeldBytes + msg.length > UDP_BACKLOG_BYTES) {
      this.counters.dropped++;
      if (Date.now() - this.lastDropAt > 60_000)
        this.log.warn(
          { source: this.name, dropped: this.counters.dropped },
          'syslog UDP datagrams dropped: the pipeline cannot keep up (UDP cannot be slowed down)',
        );
      this.lastDropAt = Date.now();
      return;
    }
    this.udpHeldBytes += msg.length;
    this.udpBacklog.push({ bytes, truncated, sender: sender(address, port), held: msg.length });
    this.udpDraining ??= this.drainUdp().finally(() => (this.udpDraining = undefined));
  }

  private async drainUdp(): Promise<void> {
    while (this.udpBacklog.length > 0) {
      const batch = this.udpBacklog;
      this.udpBacklog = [];
      for (const d of batch) {
        if (this.stopping) return;
        await this.message(d.bytes, d.truncated, d.sender, this.udpWriter);
        this.udpHeldBytes -= d.held;
      }
    }
  }

  finished(): Promise<void> {
    return new Promise(() => undefined); // listens until the agent stops
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.udp?.close();
    const closed = this.server ? new Promise<void>((r) => this.server!.close(() => r())) : Promise.resolve();
    for (const s of this.sockets) s.destroy();
    for (const s of this.raw) s.destroy();
    await Promise.all([...this.reading]);
    await this.udpDraining;
    await closed;
  }

  async close(): Promise<void> {}

  /**
   * Datagrams dropped: by the source while the pipeline was full, and by the kernel when the socket's
   * receive buffer was (its count in /proc/net/udp, for this socket's port).
   */
  get dropped(): number {
    this.readKernelDrops();
    return this.counters.dropped;
  }

  /**
   * Adds what the kernel dropped on this socket since the last look to the drop counter (which outlives
   * the socket across reloads). The socket is the line of /proc/net/udp[6] with its own address and port.
   */
  private readKernelDrops(): void {
    if (!this.udp || !this.port) return;
    const { address } = this.udp.address();
    const local = `${procAddress(address)}:${this.port.toString(16).toUpperCase().padStart(4, '0')}`;
    let text: string;
    try {
      text = readFileSync(address.includes(':') ? '/proc/net/udp6' : '/proc/net/udp', 'utf8');
    } catch {
      return;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[1] !== local) continue;
      const seen = Number(cols[cols.length - 1]) || 0;
      if (seen > this.kernelSeen) {
        this.counters.dropped += seen - this.kernelSeen;
        this.lastDropAt = Date.now();
      }
      this.kernelSeen = seen;
      return;
    }
  }

  status(): SourceStatus {
    const dropped = this.dropped;
    if (dropped === 0) return { warnings: [] };
    return {
      warnings: [
        `${dropped} UDP datagram(s) dropped since start, the last at ${new Date(this.lastDropAt).toISOString()}: the pipeline or the socket's receive buffer could not keep up`,
      ],
      // Degraded while drops are recent: they are lost data.
      degraded: Date.now() - this.lastDropAt < RECENT_DROPS_MS,
    };
  }

  gauges(): Gauge[] {
    const labels = { source: this.name };
    return [
      {
        name: 'ferry_source_syslog_connections',
        help: 'TCP connections open now',
        labels,
        value: this.sockets.size,
      },
      {
        name: 'ferry_source_syslog_connections_total',
        help: 'TCP connections accepted',
        labels,
        value: this.counters.connections,
      },
      {
        name: 'ferry_source_syslog_refused_connections_total',
        help: 'TCP connections refused past max_connections',
        labels,
        value: this.counters.refusedConnections,
      },
      {
        name: 'ferry_source_syslog_dropped_total',
        help: 'UDP datagrams dropped because the pipeline or the receive buffer could not keep up',
        labels,
        value: this.dropped,
      },
      {
        name: 'ferry_source_syslog_parse_errors_total',
        help: 'Messages that were neither RFC 5424 nor RFC 3164 (shipped with parse_error)',
        labels,
        value: this.counters.parseErrors,
      },
    ];
  }
}

const SYSLOG_SOURCE_OPTIONS = {
  mode: oneOf(['udp', 'tcp'], 'tcp').doc('`udp` or `tcp` (with TLS when `tls` is set)'),
  address: listen('127.0.0.1:5514').doc('`host:port` to listen on (`0.0.0.0:514` for every interface)'),
  framing: oneOf(['auto', 'newline', 'octet_counted'], 'auto').doc(
    'TCP framing (RFC 6587): `newline`, `octet_counted` (`<length> <message>`), or `auto`, told apart per message',
  ),
  max_message_bytes: bytes('64KiB').doc('longer messages are cut there and marked `truncated: true`'),
  max_connections: int(256, { min: 1 }).doc('TCP connections at once; more are refused and counted'),
  idle_timeout: duration('10m').doc(
    'a TCP connection that sends nothing for this long is closed, giving its slot back (a TLS handshake gets 10 s)',
  ),
  tls: optionalGroup({
    cert_file: str().required().doc('the server certificate (PEM)'),
    key_file: str().required().doc('its private key (PEM)'),
    ca_file: str()
      .doc('CA certificates (PEM) that client certificates must chain to; clients must present one')
      .shown('no client certificates'),
  }).doc('TCP with TLS'),
  // The syslog parser's own keys: the same declarations (and the same README rows).
  ...SYSLOG_PARSER_OPTIONS,
} satisfies OptionSpecs;

export const syslogSource: SourceSpec<SyslogSettings, typeof SYSLOG_SOURCE_OPTIONS> = {
  type: 'syslog',
  summary: 'syslog messages over UDP, TCP or TCP with TLS (RFC 5424, RFC 3164; RFC 6587 framing)',
  options: SYSLOG_SOURCE_OPTIONS,
  configure(v, o) {
    if (v.tls && v.mode === 'udp') o.fail('tls', 'TLS is for mode: tcp');
    return {
      mode: v.mode,
      address: v.address,
      framing: v.framing,
      maxMessageBytes: v.max_message_bytes,
      maxConnections: v.max_connections,
      idleTimeoutMs: v.idle_timeout,
      tls: v.tls && { certFile: v.tls.cert_file, keyFile: v.tls.key_file, caFile: v.tls.ca_file },
      rfc: v.rfc,
      timezone: v.timezone,
    };
  },
  create: (s, ctx) =>
    new SyslogSource(
      ctx.name,
      s,
      { info: (o, m) => ctx.log.info(o, m), warn: (o, m) => ctx.log.warn(o, m) },
      ctx.counters(newSyslogCounters),
      ctx.decoded,
    ),
};
