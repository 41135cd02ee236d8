/**
 * What the sources that listen for HTTP (the `http` relay, `otlp`) share: a node:http server on the
 * configured address, Bearer tokens compared in constant time, errors as JSON `{code, message}`, request
 * bodies decompressed into memory within per-request limits and a budget across requests, and a stop that
 * lets requests already handing their events on finish while new ones are refused.
 *
 * A body is read whole before any of its events is handed on, so a request refused for any reason (a
 * limit, a corrupt gzip stream, a malformed array) hands on nothing: the client may send it again as it
 * is without duplicating events.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import picomatch from 'picomatch';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import type { Socket } from 'node:net';
import { IngestBodyError } from '../../ingest/errors.js';
import type { IngestParams } from '../../ingest/request.js';
import { NowAndThen } from '../../util/now-and-then.js';
import { letGoOfUnreadBody } from '../../util/unread-body.js';
import { bytes, duration, globs, int } from '../../config/options.js';
import { BodyBudget, readBody, type HeldBody } from '../../ingest/body.js';
import { datasetNameProblem } from '../../service/store/dataset-name.js';
import type { Gauge, Source, SourceCounters, SourceLine, SourceStatus, Stream } from './source.js';

/** An answer other than success, with its status. */
export class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpRefusal';
  }
}

const INGEST_STATUS: Record<IngestBodyError['kind'], number> = {
  invalid: 400,
  too_large: 413,
  unsupported: 415,
  busy: 503,
};

/** Constant-time token checks: every configured token is compared, through digests of equal length. */
export class TokenCheck {
  private readonly digests: Buffer[];

  /** @param tokens the accepted tokens; none: every request is taken (loopback only, see the sources' checks) */
  constructor(tokens: readonly string[]) {
    this.digests = tokens.map(digest);
  }

  get required(): boolean {
    return this.digests.length > 0;
  }

  /** Throws a 401 unless the Authorization header carries an accepted Bearer token. */
  check(authorization: string | undefined): void {
    if (!this.required) return;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new HttpRefusal(401, 'Unauthorized: send Authorization: Bearer <token>');
    const given = digest(m[1]!);
    let ok = false;
    for (const d of this.digests) ok = timingSafeEqual(d, given) || ok;
    if (!ok) throw new HttpRefusal(401, 'Unauthorized: invalid token');
  }
}

const digest = (token: string) => createHash('sha256').update(token).digest();

/** What a client that went away before its body ended is counted as (nginx's "client closed request"). */
const CLIENT_CLOSED = 499;

/** The status and message of what a handler threw; anything unforeseen is a 500 whose text is not sent. */
function refusalOf(e: unknown, req: IncomingMessage): HttpRefusal {
  if (e instanceof HttpRefusal) return e;
  if (e instanceof IngestBodyError)
    return new HttpRefusal(INGEST_STATUS[e.kind], e.message, e.kind === 'busy' ? { 'retry-after': '1' } : {});
  // The client, not the agent, ended it (Node's "aborted"): no answer can reach it, and nothing is wrong here.
  if (!req.complete && (e as NodeJS.ErrnoException).code === 'ECONNRESET')
    return new HttpRefusal(CLIENT_CLOSED, 'the client closed the request before its body ended');
  return new HttpRefusal(500, 'internal error; the agent logged it');
}

export function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export interface ListenerLog {
  info(o: object, m: string): void;
  warn(o: object, m: string): void;
  error(o: object, m: string): void;
}

/** Requests answered, by status, and the refusals said lately (for /health). */
export interface ListenerCounters {
  requests: Map<number, number>;
}

export interface HttpListenerOptions {
  source: string;
  address: { host: string; port: number };
  maxConnections: number;
  /** A connection with no request in progress is closed after this long (so idle ones free their slot). */
  idleTimeoutMs: number;
  tokens: TokenCheck;
  log: ListenerLog;
  /** Answers one authenticated request; throws HttpRefusal (or an ingest body error) to refuse it. */
  handle(req: IncomingMessage, res: ServerResponse, stopping: () => boolean): Promise<void>;
}

/** The time a request has to arrive whole, and its headers. */
const REQUEST_MS = 60_000;
const HEADERS_MS = 20_000;

/** Refusals in the last ten minutes make a warning in /health. */
const RECENT_MS = 10 * 60_000;

export class HttpListener {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly active = new Set<Promise<void>>();
  private stopping = false;
  readonly requests = new Map<number, number>();
  /** The last refusal of each kind the operator should hear of (a token refused, events not accepted). */
  private readonly lately = new Map<number, { at: number; message: string; from: string }>();
  private readonly said = new Map<number, NowAndThen>();
  port = 0;

  constructor(private readonly o: HttpListenerOptions) {}

  async start(): Promise<void> {
    // Kept-alive connections are closed at idle_timeout too, and the answers say so (Keep-Alive: timeout=…),
    // so that clients stop reusing a connection before it is closed under them.
    // A request must arrive whole within REQUEST_MS (headers within HEADERS_MS): one that trickles in cannot
    // hold a connection slot for longer.
    const server = createServer(
      { keepAliveTimeout: this.o.idleTimeoutMs, requestTimeout: REQUEST_MS, headersTimeout: HEADERS_MS },
      (req, res) => this.request(req, res),
    );
    server.maxConnections = this.o.maxConnections;
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      this.arm(s);
      s.once('close', () => {
        this.sockets.delete(s);
        clearTimeout(this.idle.get(s)?.timer);
      });
    });
    server.on('clientError', (_e, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      else socket.destroy();
    });
    this.server = server;
    const { host, port } = this.o.address;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.port = (server.address() as { port: number }).port;
  }

  /** Per connection: requests in progress, and the timer that closes it once it has none for a while. */
  private readonly idle = new WeakMap<Socket, { requests: number; timer?: NodeJS.Timeout }>();

  private arm(s: Socket): void {
    let state = this.idle.get(s);
    if (!state) this.idle.set(s, (state = { requests: 0 }));
    clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      if (state.requests === 0) s.destroy();
      else this.arm(s);
    }, this.o.idleTimeoutMs);
    state.timer.unref();
  }

  private request(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const state = this.idle.get(socket);
    if (state) state.requests++;
    res.once('close', () => {
      if (state) state.requests--;
      if (!socket.destroyed) this.arm(socket);
    });
    const work = this.serve(req, res).finally(() => this.active.delete(work));
    this.active.add(work);
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let status = 200;
    try {
      if (this.stopping)
        throw new HttpRefusal(503, 'the agent is stopping; send again shortly', {
          'retry-after': '5',
          connection: 'close',
        });
      this.o.tokens.check(req.headers.authorization);
      await this.o.handle(req, res, () => this.stopping);
      status = res.statusCode;
    } catch (e) {
      const r = refusalOf(e, req);
      status = r.status;
      if (r.status === 500) this.o.log.error({ source: this.o.source, err: e, url: req.url }, 'request failed');
      this.note(r, req);
      // A body not read to its end cannot be told from a next request: the connection closes after the answer.
      const unread = !req.complete;
      answer(
        res,
        r.status,
        { code: r.status, message: r.message },
        unread ? { ...r.headers, connection: 'close' } : r.headers,
      );
      letGoOfUnreadBody(req);
    } finally {
      this.requests.set(status, (this.requests.get(status) ?? 0) + 1);
    }
  }

  /** Says a refusal in the log (now and then per status) and remembers it for /health. */
  private note(r: HttpRefusal, req: IncomingMessage): void {
    const from = req.socket?.remoteAddress ?? '';
    this.lately.set(r.status, { at: Date.now(), message: r.message, from });
    let said = this.said.get(r.status);
    if (!said) this.said.set(r.status, (said = new NowAndThen()));
    said.hit((count) =>
      this.o.log.warn(
        { source: this.o.source, status: r.status, from, url: req.url?.slice(0, 200), count },
        `request refused: ${r.message}`,
      ),
    );
  }

  /** /health lines: refusals of the last ten minutes, the most recent of each status. */
  warnings(now = Date.now()): { warnings: string[]; refusedEvents: boolean } {
    const warnings: string[] = [];
    let refusedEvents = false;
    for (const [status, l] of this.lately) {
      if (now - l.at > RECENT_MS) continue;
      warnings.push(`${status} at ${new Date(l.at).toISOString()} to ${l.from}: ${l.message}`);
      if (status === 503 && !/stopping/.test(l.message)) refusedEvents = true;
    }
    return { warnings, refusedEvents };
  }

  /** Refuses new requests and stops listening; resolves once the requests handing events on are done. */
  async stop(handing: () => Promise<void>): Promise<void> {
    this.stopping = true;
    this.server?.close();
    this.server?.closeIdleConnections();
    await handing();
  }

  /** Waits (a bounded time) for the requests still being answered, then closes every connection. */
  async close(graceMs = 5_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.active]), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    for (const s of this.sockets) s.destroy();
  }
}

/**
 * The datasets a source takes events for (`datasets: ["app-*"]`, globs; all when none are given): a
 * request for another is refused with 403, so a token given to apps cannot write anywhere.
 */
export function datasetGate(patterns: readonly string[] | undefined): (dataset: string) => void {
  if (!patterns?.length) return () => undefined;
  const allowed = picomatch([...patterns]);
  return (dataset) => {
    if (!allowed(dataset))
      throw new HttpRefusal(403, `dataset "${dataset}" is not one this source takes (${patterns.join(', ')})`);
  };
}

/** What a request's stream hears back from the pipeline: when its last event is queued, and drops. */
class RequestStream implements Stream {
  readonly whole = true;
  lost = false;
  private resolve!: () => void;
  readonly queued = new Promise<void>((r) => (this.resolve = r));

  constructor(
    readonly id: string,
    readonly source: string,
    private readonly last: number,
  ) {
    if (last === 0) this.resolve();
  }

  acknowledge(offset: number): void {
    if (offset >= this.last) this.resolve();
  }

  dropped(): void {
    this.lost = true;
  }
}

/**
 * Hands a request's events to the pipeline as one stream of their own, has the sinks queue them at once,
 * and returns once every one is in the disk queue of every sink: then, and only then, may the request be
 * answered 200. Throws a 503 when they are not queued in time or a full queue dropped them.
 */
export class HandOff {
  emit!: (l: SourceLine) => Promise<void> | undefined;
  /** Requests handing their events on: a stopping source waits for them. */
  private readonly handing = new Set<Promise<void>>();
  private seq = 0;

  /**
   * @param decoded whether a transform reads the events: if not, those given as bytes go to the sinks as
   *   they are, never decoded to text
   */
  constructor(
    private readonly source: string,
    private readonly flush: () => Promise<void>,
    private readonly timeoutMs: number,
    private readonly decoded = true,
  ) {}

  /**
   * @param res the request's answer: a client that went away while its body was read or decoded gets
   *   nothing handed on (it will send again, and would get its events twice)
   * @param done called once the events are all handed on (or the hand-off failed), even after a late answer:
   *   the memory they hold is given back then
   */
  async queue(
    events: readonly (string | Buffer)[],
    dataset: string,
    params: IngestParams,
    stopping: () => boolean,
    res: ServerResponse,
    done: () => void,
  ): Promise<void> {
    if (stopping()) {
      done();
      throw new HttpRefusal(503, 'the agent is stopping; send again shortly', { 'retry-after': '5' });
    }
    if (res.destroyed) {
      done();
      throw new HttpRefusal(CLIENT_CLOSED, 'the client closed the request before its events were handed on');
    }
    const stream = new RequestStream(`${this.source}#${++this.seq}`, this.source, events.length);
    // The time limit covers the whole hand-off: a full queue (when_full: block) holds the emits themselves.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), this.timeoutMs)));
    const work = (async () => {
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!;
        const bytes = typeof event !== 'string';
        const wait = this.emit({
          text: !bytes ? event : this.decoded ? event.toString('utf8') : '',
          raw: bytes && !this.decoded ? event : undefined,
          truncated: false,
          structured: true,
          dataset,
          params,
          stream,
          offset: i + 1,
          generation: 0,
        });
        if (wait) await wait;
      }
    })();
    this.handing.add(work);
    const handed = work.finally(() => {
      this.handing.delete(work);
      done();
    });
    const queued = handed.then(async () => {
      if (events.length > 0) await this.flush();
      await stream.queued;
      return 'queued' as const;
    });
    let outcome: 'queued' | 'late';
    try {
      outcome = await Promise.race([queued, late]);
    } finally {
      clearTimeout(timer);
    }
    if (outcome === 'late') {
      queued.catch(() => undefined);
      throw new HttpRefusal(
        503,
        `the events were not queued within ${this.timeoutMs / 1000}s (a sink's queue is full, or the agent is stopping); they may still be shipped`,
        { 'retry-after': '5' },
      );
    }
    if (stream.lost)
      throw new HttpRefusal(
        503,
        "a sink's queue is full (when_full: drop_newest) and dropped events of this request; send it again later",
        { 'retry-after': '5' },
      );
  }

  /** Resolves once no request is handing events on. */
  async handed(): Promise<void> {
    await Promise.all([...this.handing]);
  }
}

/** The settings every source that listens for HTTP has. */
export interface ListeningSettings {
  address: { host: string; port: number };
  tokens: string[];
  /** Globs of the datasets taken (all when empty). */
  datasets?: string[];
  maxBodyBytes: number;
  maxDecompressedBytes: number;
  maxInflightBytes: number;
  maxConnections: number;
  /** A connection with no request in progress is closed after this long. */
  idleTimeoutMs: number;
  /** A request whose events are not all queued by then is answered 503 (they may still be shipped). */
  queueTimeoutMs: number;
}

/** The keys of ListeningSettings that read the same in every such source. */
export const LISTENING_OPTIONS = {
  datasets: globs([])
    .doc('the datasets it takes events for, as globs (`app-*`); a request for another is refused with 403')
    .shown('all'),
  max_body_bytes: bytes('20MiB').doc('larger request bodies (as sent, compressed or not) are refused with 413'),
  max_connections: int(256, { min: 1 }).doc('connections at once; more are refused'),
  idle_timeout: duration('30s').doc('a connection with no request in progress is closed after this long'),
  queue_timeout: duration('30s').doc(
    "a request whose events are not all in the sinks' disk queues by then is answered 503 (they may still be shipped)",
  ),
};

/**
 * A source that takes events over HTTP (the relay, OTLP): the listener, the memory budget of bodies, the
 * hand-off that answers once events are queued, and the source's life cycle; a kind brings its `handle`.
 */
export abstract class ListeningSource<C extends SourceCounters> implements Source {
  private readonly listener: HttpListener;
  private readonly budget: BodyBudget;
  protected readonly handOff: HandOff;
  private readonly allows: (dataset: string) => void;

  /** @param started what the log says once it listens */
  constructor(
    readonly name: string,
    protected readonly s: ListeningSettings,
    protected readonly log: ListenerLog,
    flush: () => Promise<void>,
    readonly counters: C,
    private readonly started: string,
    decoded = true,
  ) {
    this.budget = new BodyBudget(s.maxInflightBytes);
    this.handOff = new HandOff(name, flush, s.queueTimeoutMs, decoded);
    this.allows = datasetGate(s.datasets);
    this.listener = new HttpListener({
      source: name,
      address: s.address,
      maxConnections: s.maxConnections,
      idleTimeoutMs: s.idleTimeoutMs,
      tokens: new TokenCheck(s.tokens),
      log,
      handle: (req, res, stopping) => this.handle(req, res, stopping),
    });
  }

  /** Answers one authenticated request; throws HttpRefusal (or an ingest body error) to refuse it. */
  protected abstract handle(req: IncomingMessage, res: ServerResponse, stopping: () => boolean): Promise<void>;

  get port(): number {
    return this.listener.port;
  }

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.handOff.emit = emit;
    await this.listener.start();
    this.log.info(
      { source: this.name, address: `${this.s.address.host}:${this.port}`, tokens: this.s.tokens.length > 0 },
      this.started,
    );
  }

  /** Throws 400 for a name no dataset may have, 403 for one this source does not take. */
  protected checkDataset(dataset: string): void {
    const problem = datasetNameProblem(dataset);
    if (problem) throw new HttpRefusal(400, problem);
    this.allows(dataset);
  }

  /** The request's body, decompressed, within the limits and the budget (`weight`: its cost per byte). */
  protected read(req: IncomingMessage, weight: number, convert: Transform[] = []): Promise<HeldBody> {
    return readBody(
      req,
      req.headers['content-encoding'],
      { maxBodyBytes: this.s.maxBodyBytes, maxDecompressedBytes: this.s.maxDecompressedBytes },
      this.budget,
      `the agent (source ${this.name}, max_inflight_bytes)`,
      convert,
      weight,
      contentLength(req),
    );
  }

  finished(): Promise<void> {
    return new Promise(() => undefined); // listens until the agent stops
  }

  async stop(): Promise<void> {
    await this.listener.stop(() => this.handOff.handed());
  }

  async close(): Promise<void> {
    await this.listener.close();
  }

  status(): SourceStatus {
    const { warnings, refusedEvents } = this.listener.warnings();
    return { warnings, ...(refusedEvents ? { degraded: true } : {}) };
  }

  /** The requests answered, by status code, under the kind's metric name; and the bodies held now. */
  protected listenerGauges(requests: { name: string; help: string }, inflight?: string): Gauge[] {
    const labels = { source: this.name };
    return [
      ...[...this.listener.requests].map(([code, value]) => ({
        ...requests,
        labels: { ...labels, code: String(code) },
        value,
      })),
      ...(inflight
        ? [{ name: inflight, help: 'Memory counted for request bodies held now', labels, value: this.budget.used }]
        : []),
    ];
  }

  abstract gauges(): Gauge[];
}

/** A request's Content-Length, when it gives a valid one (Node's parser reads no more than it says). */
function contentLength(req: IncomingMessage): number | undefined {
  const text = req.headers['content-length'];
  return text !== undefined && /^[0-9]{1,15}$/.test(text) ? Number(text) : undefined;
}
