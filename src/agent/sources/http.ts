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
import { bytes, duration, globs, int, listen, strings, type OptionSpecs } from '../../config/options.js';
import { csvToNdjson, type CsvStats } from '../../ingest/csv.js';
import { MAX_LISTED_FAILURES, splitArray, splitNdjson, type SplitBody } from '../../ingest/events.js';
import { bodyFormat, csvParams, parseLabels, timeParams, type IngestParams } from '../../ingest/request.js';
import { datasetNameProblem } from '../../service/store/dataset-name.js';
import { formatRfc3339Nano } from '../../util/time.js';
import { BodyBudget, readBody } from '../../ingest/body.js';
import {
  answer,
  datasetGate,
  HandOff,
  HttpListener,
  HttpRefusal,
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
} from './source.js';

export interface HttpSourceSettings {
  address: { host: string; port: number };
  tokens: string[];
  /** Globs of the datasets taken (all when empty). */
  datasets?: string[];
  maxBodyBytes: number;
  maxDecompressedBytes: number;
  maxInflightBytes: number;
  maxConnections: number;
  /** Events (and values that are not) in one request, at most. */
  maxEvents: number;
  /** A connection with no request in progress is closed after this long. */
  idleTimeoutMs: number;
  /** A request whose events are not all queued by then is answered 503 (they may still be shipped). */
  queueTimeoutMs: number;
}

export interface HttpSourceCounters extends SourceCounters {
  /** Events a 200 listed as failed (not JSON objects). */
  failedEvents: number;
}

export const newHttpSourceCounters = (): HttpSourceCounters => ({ ...newSourceCounters(), failedEvents: 0 });

/**
 * What a body costs in memory, counted against max_inflight_bytes, per decompressed byte: the bytes, their
 * text, and the events cut from it.
 */
const BODY_WEIGHT = 3;

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

export class HttpSource implements Source {
  readonly counters: HttpSourceCounters;
  private readonly listener: HttpListener;
  private readonly budget: BodyBudget;
  private readonly params = new ParamsInterner();
  private readonly handOff: HandOff;
  private readonly allows: (dataset: string) => void;

  constructor(
    readonly name: string,
    private readonly s: HttpSourceSettings,
    private readonly log: ListenerLog,
    flush: () => Promise<void>,
    counters?: HttpSourceCounters,
  ) {
    this.counters = counters ?? newHttpSourceCounters();
    this.handOff = new HandOff(name, flush, s.queueTimeoutMs);
    this.allows = datasetGate(s.datasets);
    this.budget = new BodyBudget(s.maxInflightBytes);
    this.listener = new HttpListener({
      source: name,
      address: s.address,
      maxConnections: s.maxConnections,
      idleTimeoutMs: s.idleTimeoutMs,
      tokens: new TokenCheck(s.tokens),
      log,
      handle: (req, res, stopping) => this.ingest(req, res, stopping),
    });
  }

  get port(): number {
    return this.listener.port;
  }

  async start(emit: (l: SourceLine) => Promise<void> | undefined): Promise<void> {
    this.handOff.emit = emit;
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
    this.allows(dataset);
    const query = Object.fromEntries(new URL(url, 'http://relay').searchParams) as Record<string, string>;
    const format = bodyFormat(req.headers['content-type']);
    const { labels, bytes: labelBytes } = parseLabels(req.headers['x-axiom-event-labels']);
    const params = this.params.of({ ...timeParams(query), ...(Object.keys(labels).length ? { labels } : {}) });
    const csvStats: CsvStats = { skipped: [], collisions: 0 };
    const convert = format === 'csv' ? csvToNdjson(csvParams(query, req.headers['x-axiom-csv-fields']), csvStats) : [];

    const body = await readBody(
      req,
      req.headers['content-encoding'],
      { maxBodyBytes: this.s.maxBodyBytes, maxDecompressedBytes: this.s.maxDecompressedBytes },
      this.budget,
      `the agent (source ${this.name}, max_inflight_bytes)`,
      convert,
      BODY_WEIGHT,
    );
    let split: SplitBody;
    try {
      split =
        format === 'json' && firstChar(body.bytes) === 0x5b
          ? splitArray(body.bytes, this.s.maxEvents)
          : splitNdjson(body.bytes, this.s.maxEvents);
    } catch (e) {
      body.release();
      throw e;
    }
    await this.handOff.queue(split.events, dataset, params, stopping, body.release);

    const receivedAt = formatRfc3339Nano(BigInt(Date.now()) * 1_000_000n);
    const failures = [
      ...csvStats.skipped.map((s) => `CSV line ${s.line}: ${s.error}`),
      ...split.failures.map((f) => f.error),
    ];
    const failed = csvStats.skipped.length + split.failed;
    this.counters.linesIn += split.events.length;
    this.counters.bytesIn += body.size;
    this.counters.failedEvents += failed;
    answer(res, 200, {
      ingested: split.events.length,
      failed,
      failures: failures.slice(0, MAX_LISTED_FAILURES).map((error) => ({ timestamp: receivedAt, error })),
      processedBytes: body.size + labelBytes,
      blocksCreated: 0,
      walLength: 0,
      ...(csvStats.collisions > 0 ? { fieldCollisions: csvStats.collisions } : {}),
    });
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

/** The body's first byte past JSON whitespace and a byte order mark (as the service's reader tells an array). */
function firstChar(bytes: Buffer): number | undefined {
  for (const b of bytes)
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09 && b !== 0xef && b !== 0xbb && b !== 0xbf) return b;
  return undefined;
}

const HTTP_SOURCE_OPTIONS = {
  address: listen('127.0.0.1:8079').doc('`host:port` to listen on; keep it on loopback unless the apps are elsewhere'),
  tokens: strings()
    .required()
    .doc('the Bearer tokens apps may send (`${APP_TOKEN}`); any other is refused with 401')
    .check((t) => (t.length === 0 ? 'give at least one token' : undefined)),
  datasets: globs([])
    .doc('the datasets it takes events for, as globs (`app-*`); a request for another is refused with 403')
    .shown('all'),
  max_body_bytes: bytes('20MiB').doc('larger request bodies (as sent, compressed or not) are refused with 413'),
  max_decompressed_bytes: bytes('64MiB').doc('… and bodies larger than this once decompressed'),
  max_inflight_bytes: bytes('256MiB').doc(
    'memory for request bodies at once, across requests (each counts three times its decompressed size: its bytes, text and events); past it a request is answered 503 with Retry-After',
  ),
  max_connections: int(256, { min: 1 }).doc('connections at once; more are refused'),
  max_events: int(100_000, { min: 1 }).doc('values in one request body, at most (413 beyond)'),
  idle_timeout: duration('30s').doc('a connection with no request in progress is closed after this long'),
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
    if (v.max_decompressed_bytes * BODY_WEIGHT > v.max_inflight_bytes)
      o.fail(
        'max_decompressed_bytes',
        `must be at most a third of max_inflight_bytes (a body counts ${BODY_WEIGHT} times its size there, so a larger one could never be taken)`,
      );
    return {
      address: v.address,
      tokens: v.tokens,
      datasets: v.datasets,
      maxBodyBytes: v.max_body_bytes,
      maxDecompressedBytes: v.max_decompressed_bytes,
      maxInflightBytes: v.max_inflight_bytes,
      maxConnections: v.max_connections,
      maxEvents: v.max_events,
      idleTimeoutMs: v.idle_timeout,
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
