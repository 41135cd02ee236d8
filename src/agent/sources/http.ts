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
import { bytes, int, listen, strings, type OptionSpecs } from '../../config/options.js';
import { csvToNdjson, type CsvStats } from '../../ingest/csv.js';
import { MAX_LISTED_FAILURES, splitArray, splitNdjson, type SplitBody } from '../../ingest/events.js';
import { bodyFormat, csvParams, parseLabels, timeParams, type IngestParams } from '../../ingest/request.js';
import { formatRfc3339Nano } from '../../util/time.js';
import {
  answer,
  HttpRefusal,
  LISTENING_OPTIONS,
  ListeningSource,
  type ListenerLog,
  type ListeningSettings,
} from './http-listener.js';
import { newSourceCounters, type Gauge, type SourceCounters, type SourceSpec } from './source.js';

export interface HttpSourceSettings extends ListeningSettings {
  /** Events (and values that are not) in one request, at most. */
  maxEvents: number;
}

export interface HttpSourceCounters extends SourceCounters {
  /** Events a 200 listed as failed (not JSON objects). */
  failedEvents: number;
}

export const newHttpSourceCounters = (): HttpSourceCounters => ({ ...newSourceCounters(), failedEvents: 0 });

/**
 * What a body costs in memory, counted against max_inflight_bytes, per decompressed byte: the bytes, and the
 * events cut from it (views of the bytes, or their text where a transform reads them).
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

export class HttpSource extends ListeningSource<HttpSourceCounters> {
  private readonly params = new ParamsInterner();

  constructor(
    name: string,
    protected override readonly s: HttpSourceSettings,
    log: ListenerLog,
    flush: () => Promise<void>,
    counters?: HttpSourceCounters,
    decoded = true,
  ) {
    super(
      name,
      s,
      log,
      flush,
      counters ?? newHttpSourceCounters(),
      'source started: relaying Axiom ingest requests (POST /v1/ingest/{dataset})',
      decoded,
    );
  }

  protected async handle(req: IncomingMessage, res: ServerResponse, stopping: () => boolean): Promise<void> {
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
    this.checkDataset(dataset);
    const query = Object.fromEntries(new URL(url, 'http://relay').searchParams) as Record<string, string>;
    const format = bodyFormat(req.headers['content-type']);
    const { labels, bytes: labelBytes } = parseLabels(req.headers['x-axiom-event-labels']);
    const params = this.params.of({ ...timeParams(query), ...(Object.keys(labels).length ? { labels } : {}) });
    const csvStats: CsvStats = { skipped: [], collisions: 0 };
    const convert = format === 'csv' ? csvToNdjson(csvParams(query, req.headers['x-axiom-csv-fields']), csvStats) : [];

    const body = await this.read(req, BODY_WEIGHT, convert);
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
    await this.handOff.queue(split.events, dataset, params, stopping, res, body.release);

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

  gauges(): Gauge[] {
    return [
      ...this.listenerGauges(
        { name: 'ferry_source_http_requests_total', help: 'Requests answered, by status code' },
        'ferry_source_http_inflight_bytes',
      ),
      {
        name: 'ferry_source_http_failed_events_total',
        help: 'Events a 200 listed as failed (not JSON objects, bad CSV records)',
        labels: { source: this.name },
        value: this.counters.failedEvents,
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
  ...LISTENING_OPTIONS,
  max_decompressed_bytes: bytes('64MiB').doc('… and bodies larger than this once decompressed'),
  max_inflight_bytes: bytes('256MiB').doc(
    'memory for request bodies at once, across requests (each counts three times its decompressed size: its bytes and the events cut from them); past it a request is answered 503 with Retry-After',
  ),
  max_events: int(100_000, { min: 1 }).doc('values in one request body, at most (413 beyond)'),
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
    new HttpSource(ctx.name, s, ctx.log, () => ctx.flush(), ctx.counters(newHttpSourceCounters), ctx.decoded),
};
