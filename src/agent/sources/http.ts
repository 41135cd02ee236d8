/**
 * The `http` source: an Axiom-compatible ingest endpoint in the agent, so that applications using Axiom's
 * clients (`@axiomhq/js`, pino, winston) hand their events to the host's agent, which keeps them on disk
 * while the network or the receiver is down. It answers `POST /v1/ingest/{dataset}` and
 * `/v1/datasets/{dataset}/ingest` with JSON, NDJSON or CSV bodies (gzip, zstd, deflate), and answers 200
 * only once every event of the request is in the disk queue of every sink it goes to: the application may
 * forget them then. The result is the service's (`ingested`, `failed`, `failures`, `processedBytes`…).
 *
 * Each event keeps the dataset of its path, and the request's `timestamp-field`, `timestamp-format` and
 * X-Axiom-Event-Labels go with it to the receiver, which reads the events' times as it would have if the
 * application had sent them directly. The relay judges only what it can (JSON objects), so an event whose
 * time the receiver cannot read fails there, into the sink's dead-letter file.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bytes, duration, int, listen, strings, type OptionSpecs } from '../../config/options.js';
import { csvToNdjson, type CsvStats } from '../../ingest/csv.js';
import { splitArray, splitNdjson, type SplitBody } from '../../ingest/events.js';
import { bodyFormat, csvParams, parseLabels, timeParams, type IngestParams } from '../../ingest/request.js';
import { datasetNameProblem } from '../../service/store/dataset-name.js';
import { formatRfc3339Nano } from '../../util/time.js';
import {
  answer,
  BodyBudget,
  HttpListener,
  HttpRefusal,
  readBody,
  TokenCheck,
  type ListenerLog,
} from './http-listener.js';
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

export interface HttpSourceSettings {
  address: { host: string; port: number };
  tokens: string[];
  maxBodyBytes: number;
  maxDecompressedBytes: number;
  maxInflightBytes: number;
  maxConnections: number;
  /** A request whose events are not all queued by then is answered 503 (they may still be shipped). */
  queueTimeoutMs: number;
}

export interface HttpSourceCounters extends SourceCounters {
  /** Events a 200 listed as failed (not JSON objects). */
  failedEvents: number;
}

export const newHttpSourceCounters = (): HttpSourceCounters => ({ ...newSourceCounters(), failedEvents: 0 });

/** At most this many failures are listed in a result; `failed` counts them all (as the service's). */
const MAX_LISTED_FAILURES = 1000;

const INGEST_PATH = /^\/v1\/(?:ingest\/([^/?]+)|datasets\/([^/?]+)\/ingest)\/?(?:\?|$)/;

/** The parameters of one request, interned: equal parameters are one object, so batches are not cut. */
class ParamsInterner {
  private readonly known = new Map<string, IngestParams>();

  of(params: IngestParams): IngestParams {
    const key = JSON.stringify(params);
    let p = this.known.get(key);
    if (!p) {
      if (this.known.size >= 1000) this.known.clear();
      this.known.set(key, (p = params));
    }
    return p;
  }
}

/** What a request's stream hears back from the pipeline: when its last event is queued, and drops. */
class RequestStream implements Stream {
  readonly source: string;
  lost = false;
  private resolve!: () => void;
  readonly queued = new Promise<void>((r) => (this.resolve = r));

  constructor(
    readonly id: string,
    source: string,
    private readonly last: number,
  ) {
    this.source = source;
    if (last === 0) this.resolve();
  }

  acknowledge(offset: number): void {
    if (offset >= this.last) this.resolve();
  }

  dropped(): void {
    this.lost = true;
  }
}

export class HttpSource implements Source {
  readonly counters: HttpSourceCounters;
  private readonly listener: HttpListener;
  private readonly budget: BodyBudget;
  private readonly params = new ParamsInterner();
  /** Requests handing their events on (stop() waits for them). */
  private readonly handing = new Set<Promise<void>>();
  private seq = 0;
  private emit!: (l: SourceLine) => Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly s: HttpSourceSettings,
    private readonly log: ListenerLog,
    private readonly flush: () => Promise<void>,
    counters?: HttpSourceCounters,
  ) {
    this.counters = counters ?? newHttpSourceCounters();
    this.budget = new BodyBudget(s.maxInflightBytes);
    this.listener = new HttpListener({
      source: name,
      address: s.address,
      maxConnections: s.maxConnections,
      tokens: new TokenCheck(s.tokens),
      log,
      handle: (req, res, stopping) => this.ingest(req, res, stopping),
    });
  }

  get port(): number {
    return this.listener.port;
  }

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.emit = emit;
    await this.listener.start();
    const { host } = this.s.address;
    this.log.info(
      { source: this.name, address: `${host}:${this.port}` },
      'source started: relaying Axiom ingest requests (POST /v1/ingest/{dataset})',
    );
  }

  private async ingest(req: IncomingMessage, res: ServerResponse, stopping: () => boolean): Promise<void> {
    const url = req.url ?? '/';
    const m = INGEST_PATH.exec(url);
    if (!m) throw new HttpRefusal(404, `route ${req.method} ${url.split('?')[0]!.slice(0, 200)} not found`);
    if (req.method !== 'POST')
      throw new HttpRefusal(405, `${req.method} is not allowed here; ingest with POST`, { allow: 'POST' });
    let dataset: string;
    try {
      dataset = decodeURIComponent(m[1] ?? m[2]!);
    } catch {
      throw new HttpRefusal(400, 'the dataset in the path is not valid percent-encoding');
    }
    const problem = datasetNameProblem(dataset);
    if (problem) throw new HttpRefusal(400, problem);
    const query = Object.fromEntries(new URL(url, 'http://relay').searchParams) as Record<string, string>;
    const format = bodyFormat(req.headers['content-type']);
    const { labels, bytes: labelBytes } = parseLabels(req.headers['x-axiom-event-labels']);
    const params = this.params.of({ ...timeParams(query), ...(Object.keys(labels).length ? { labels } : {}) });
    const csvStats: CsvStats = { skipped: [], collisions: 0 };
    const convert = format === 'csv' ? csvToNdjson(csvParams(query, req.headers['x-axiom-csv-fields']), csvStats) : [];

    const body = await readBody(
      req,
      { maxBodyBytes: this.s.maxBodyBytes, maxDecompressedBytes: this.s.maxDecompressedBytes },
      this.budget,
      convert,
    );
    let split: SplitBody;
    try {
      const text = body.bytes.toString('utf8');
      split = format === 'json' && firstChar(text) === '[' ? splitArray(text) : splitNdjson(text);
    } catch (e) {
      body.release();
      throw e;
    }
    try {
      if (stopping()) throw new HttpRefusal(503, 'the agent is stopping; send again shortly', { 'retry-after': '5' });
      const stream = await this.handOn(split.events, dataset, params);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), this.s.queueTimeoutMs)));
      const outcome = await Promise.race([stream.queued.then(() => 'queued' as const), late]);
      clearTimeout(timer);
      if (outcome === 'late')
        throw new HttpRefusal(
          503,
          `the events were not queued within ${this.s.queueTimeoutMs / 1000}s (a sink's queue is full, or the agent is stopping); they may still be shipped`,
          { 'retry-after': '5' },
        );
      if (stream.lost)
        throw new HttpRefusal(
          503,
          "a sink's queue is full (when_full: drop_newest) and dropped events of this request; send it again later",
          { 'retry-after': '5' },
        );
    } finally {
      body.release();
    }

    const receivedAt = formatRfc3339Nano(BigInt(Date.now()) * 1_000_000n);
    const failures = [
      ...csvStats.skipped.map((s) => `CSV line ${s.line}: ${s.error}`),
      ...split.failures.map((f) => f.error),
    ];
    this.counters.linesIn += split.events.length;
    this.counters.bytesIn += body.size;
    this.counters.failedEvents += failures.length;
    answer(res, 200, {
      ingested: split.events.length,
      failed: failures.length,
      failures: failures.slice(0, MAX_LISTED_FAILURES).map((error) => ({ timestamp: receivedAt, error })),
      processedBytes: body.size + labelBytes,
      blocksCreated: 0,
      walLength: 0,
      ...(csvStats.collisions > 0 ? { fieldCollisions: csvStats.collisions } : {}),
    });
  }

  /** Hands a request's events on, then has the sinks queue them at once; its stream says when they are. */
  private async handOn(events: string[], dataset: string, params: IngestParams): Promise<RequestStream> {
    const stream = new RequestStream(`${this.name}#${++this.seq}`, this.name, events.length);
    const work = (async () => {
      for (let i = 0; i < events.length; i++) {
        const wait = this.emit({
          text: events[i]!,
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
    try {
      await work;
    } finally {
      this.handing.delete(work);
    }
    if (events.length > 0) await this.flush();
    return stream;
  }

  finished(): Promise<void> {
    return new Promise(() => undefined); // listens until the agent stops
  }

  async stop(): Promise<void> {
    await this.listener.stop(async () => {
      await Promise.all([...this.handing]);
    });
  }

  async close(): Promise<void> {
    await this.listener.close();
  }

  status(): SourceStatus {
    const { warnings, refusedEvents } = this.listener.warnings();
    return { warnings, ...(refusedEvents ? { degraded: true } : {}) };
  }

  gauges(): Gauge[] {
    const labels = { source: this.name };
    return [
      ...[...this.listener.requests].map(([code, value]) => ({
        name: 'ferry_source_http_requests_total',
        help: 'Requests answered, by status code',
        labels: { ...labels, code: String(code) },
        value,
      })),
      {
        name: 'ferry_source_http_failed_events_total',
        help: 'Events a 200 listed as failed (not JSON objects, bad CSV records)',
        labels,
        value: this.counters.failedEvents,
      },
      {
        name: 'ferry_source_http_inflight_bytes',
        help: 'Decompressed request bodies held in memory now',
        labels,
        value: this.budget.used,
      },
    ];
  }
}

function firstChar(text: string): string | undefined {
  const m = /[^\s\uFEFF]/.exec(text);
  return m?.[0];
}

const HTTP_SOURCE_OPTIONS = {
  address: listen('127.0.0.1:8079').doc('`host:port` to listen on; keep it on loopback unless the apps are elsewhere'),
  tokens: strings()
    .required()
    .doc('the Bearer tokens apps may send (`${APP_TOKEN}`); any other is refused with 401')
    .check((t) => (t.length === 0 ? 'give at least one token' : undefined)),
  max_body_bytes: bytes('20MiB').doc('larger request bodies (as sent, compressed or not) are refused with 413'),
  max_decompressed_bytes: bytes('64MiB').doc('… and bodies larger than this once decompressed'),
  max_inflight_bytes: bytes('256MiB').doc(
    'decompressed bodies held in memory at once, across requests; past it a request is answered 503 with Retry-After',
  ),
  max_connections: int(256, { min: 1 }).doc('connections at once; more are refused'),
  queue_timeout: duration('30s').doc(
    "a request whose events are not all in the sinks' disk queues by then is answered 503 (they may still be shipped)",
  ),
} satisfies OptionSpecs;

export const httpSource: SourceSpec<HttpSourceSettings, typeof HTTP_SOURCE_OPTIONS> = {
  type: 'http',
  summary:
    'an Axiom-compatible ingest endpoint for apps (`@axiomhq/js`, pino, winston): 200 once the events are in the disk queue',
  options: HTTP_SOURCE_OPTIONS,
  configure(v, o) {
    if (v.max_decompressed_bytes > v.max_inflight_bytes)
      o.fail('max_decompressed_bytes', 'must not exceed max_inflight_bytes (a body that large could never be taken)');
    return {
      address: v.address,
      tokens: v.tokens,
      maxBodyBytes: v.max_body_bytes,
      maxDecompressedBytes: v.max_decompressed_bytes,
      maxInflightBytes: v.max_inflight_bytes,
      maxConnections: v.max_connections,
      queueTimeoutMs: v.queue_timeout,
    };
  },
  create: (s, ctx) =>
    new HttpSource(
      ctx.name,
      s,
      {
        info: (o, m) => ctx.log.info(o, m),
        warn: (o, m) => ctx.log.warn(o, m),
        error: (o, m) => ctx.log.error(o, m),
      },
      () => ctx.flush(),
      ctx.counters(newHttpSourceCounters),
    ),
};
