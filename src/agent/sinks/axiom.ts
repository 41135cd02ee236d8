/**
 * The `axiom` sink: POSTs NDJSON batches to {url}/v1/ingest/{dataset} of any Axiom-compatible API (Axiom,
 * or Ferry's own service), gzip-compressed (once, before they are queued) over keep-alive connections,
 * with a Bearer token. One attempt per send, its answer read as an outcome: network errors, 408, 429 and
 * 5xx are retried (with the receiver's Retry-After or X-RateLimit-Reset); 401, 403 and 404 are refusals of
 * the token or dataset, which the operator fixes; 413 is too large; a 200 listing failures is partly
 * refused; other 4xx refuse the batch. A request that cannot be made at all (a header value that cannot be
 * sent, a URL the client cannot use) throws with its cause.
 */
import { duration, oneOf, str, url, type OptionSpecs } from '../../config/options.js';
import { isConfigRefusal, isRetryable, requestedWaitMs } from '../../util/retry.js';
import { HttpPoster } from '../../util/http-post.js';
import { compress, decompress, zstdPoolProblem } from '../../util/codec.js';
import { batchLines } from '../../ingest/metric-points.js';
import { encodeMetricsExportInParts, metricsRejection } from '../../ingest/otlp-metrics-encode.js';

/** The kind of dataset metric points go to (events of it are posted as OTLP metrics). */
const METRICS_KIND = 'otel:metrics:v1';
import {
  PermanentSinkError,
  type Destination,
  type Encoding,
  type SendOutcome,
  type Sink,
  type SinkSpec,
} from './sink.js';

export interface AxiomSinkOptions {
  name: string;
  url: string;
  dataset: string;
  token: string;
  timeoutMs?: number;
  /**
   * Where the receiver takes each event's time from, and in what format (`timestamp-field`,
   * `timestamp-format`): the receiver parses it, so the agent never parses times on its hot path.
   */
  timestampField?: string;
  timestampFormat?: string;
  /** Fields added to every event by the receiver (`X-Axiom-Event-Labels`): host, environment… */
  labels?: Record<string, string>;
  /** Body encoding; batches are compressed once, before they are queued (../delivery/). */
  compression?: Encoding;
}

/** Node's errors for a request that cannot be made at all: the same request will fail the same way. */
const UNSENDABLE = new Set([
  'ERR_INVALID_CHAR',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_INVALID_URL',
  'ERR_INVALID_PROTOCOL',
  'ERR_UNESCAPED_CHARACTERS',
  'ERR_HTTP_INVALID_HEADER_VALUE',
]);

/** JSON with every character past ASCII escaped: a header value carries it as it is (any label text). */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Where one destination's batches are posted: its URL (with the time parameters) and its headers. */
interface Endpoint {
  url: URL;
  headers: Record<string, string>;
}

export class AxiomSink implements Sink {
  private readonly http: HttpPoster;
  /** The endpoint of each destination batches went to (the sink's own first). */
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly own: Endpoint;
  private metricsUrl?: URL;

  constructor(private readonly o: AxiomSinkOptions) {
    this.own = this.endpoint();
    this.http = new HttpPoster(this.own.url, { connections: 4, idleMs: 30_000 });
  }

  /**
   * The endpoint of a destination: the sink's own dataset and time settings, or those the events came with
   * (a relayed request's parameters replace the sink's time settings; its labels join the sink's).
   */
  private endpoint(to?: Destination): Endpoint {
    const key = to ? `${to.dataset}\u0000${to.params ? JSON.stringify(to.params) : ''}` : '';
    let endpoint = key === '' ? this.own : this.endpoints.get(key);
    if (endpoint) return endpoint;
    const time = to?.params ?? this.o;
    const labels = { ...this.o.labels, ...to?.params?.labels };
    const query = new URLSearchParams();
    if (time.timestampField) query.set('timestamp-field', time.timestampField);
    if (time.timestampFormat) query.set('timestamp-format', time.timestampFormat);
    const q = query.toString();
    const dataset = to?.dataset ?? this.o.dataset;
    endpoint = {
      url: new URL(`${this.o.url.replace(/\/+$/, '')}/v1/ingest/${encodeURIComponent(dataset)}${q ? `?${q}` : ''}`),
      headers: {
        authorization: `Bearer ${this.o.token}`,
        'content-type': 'application/x-ndjson',
        'user-agent': 'ferry',
        ...(Object.keys(labels).length ? { 'x-axiom-event-labels': asciiJson(labels) } : {}),
      },
    };
    // Bounded: destinations come from the config or from the events' sources, and a few hundred are many.
    if (key !== '' && this.endpoints.size < 1000) this.endpoints.set(key, endpoint);
    return endpoint;
  }

  get encoding(): Encoding {
    return this.o.compression ?? 'zstd';
  }

  async send(batch: Buffer, encoding: Encoding, to?: Destination): Promise<SendOutcome> {
    if (to?.params?.datasetKind === METRICS_KIND) return this.sendMetrics(batch, encoding, to.dataset);
    const { url, headers } = this.endpoint(to);
    const res = await this.post(
      batch,
      encoding === 'none' ? headers : { ...headers, 'content-encoding': encoding },
      url,
    );
    if ('kind' in res) return res;
    const { status, text } = res;
    if (status >= 200 && status < 300) {
      const result = parseResult(text);
      return result.failures.length
        ? { kind: 'partly-refused', events: result.events, failures: result.failures }
        : { kind: 'delivered', events: result.events };
    }
    return failure(res);
  }

  /**
   * Metric points (metric-points.ts's events, from host_metrics or the otlp source) go as OTLP metrics to
   * {url}/v1/metrics, the dataset in X-Axiom-Metrics-Dataset, as Axiom takes them; lines that are not
   * points are dead-lettered, and points the receiver refuses (its partial_success) are counted as refused.
   */
  private async sendMetrics(batch: Buffer, encoding: Encoding, dataset: string): Promise<SendOutcome> {
    const lines = batchLines(decompress(batch, encoding).toString('utf8'));
    const { body: encoded, refused: failures } = await encodeMetricsExportInParts(lines);
    if (encoded) {
      const body = await compress(encoded, 'gzip');
      this.metricsUrl ??= new URL(`${this.o.url.replace(/\/+$/, '')}/v1/metrics`);
      const res = await this.post(
        body,
        {
          authorization: `Bearer ${this.o.token}`,
          'content-type': 'application/x-protobuf',
          'content-encoding': 'gzip',
          'user-agent': 'ferry',
          'x-axiom-metrics-dataset': dataset,
        },
        this.metricsUrl,
      );
      if ('kind' in res) return res;
      if (res.status < 200 || res.status >= 300) return failure(res);
      const rejected = metricsRejection(res.body);
      if (rejected) failures.push(rejected);
    }
    return failures.length
      ? { kind: 'partly-refused', events: lines.length, failures }
      : { kind: 'delivered', events: lines.length };
  }

  /** One POST; a network failure is its outcome (retry), a request that cannot be made throws. */
  private async post(
    body: Buffer,
    headers: Record<string, string>,
    url: URL,
  ): Promise<Awaited<ReturnType<HttpPoster['post']>> | SendOutcome> {
    try {
      return await this.http.post(body, headers, this.o.timeoutMs ?? DEFAULT_TIMEOUT_MS, url);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code && UNSENDABLE.has(err.code)) {
        throw new PermanentSinkError(
          `sink ${this.o.name}: the request to ${this.o.url} cannot be sent (${err.message}); check the sink's url and token`,
        );
      }
      // An https:// URL to a port that speaks plain HTTP: OpenSSL's words for it help nobody, and no retry fixes it.
      if (err.code === 'EPROTO' && /wrong version number|packet length too long/.test(err.message))
        throw new PermanentSinkError(`sink ${this.o.name}: ${this.o.url}: the server does not speak TLS (use http://)`);
      return { kind: 'retry', trouble: { kind: 'unreachable', message: err.message } };
    }
  }

  /** Closes connections; a request in progress fails (its batch stays queued). */
  async close(): Promise<void> {
    await this.http.close();
  }
}

/** What a receiver's answer other than 2xx means for the batch. */
function failure(res: { status: number; text: string; headers: Parameters<typeof requestedWaitMs>[0] }): SendOutcome {
  const { status } = res;
  const message = errorMessage(res.text, status);
  if (status === 413) return { kind: 'too-large' };
  if (isRetryable(status)) {
    return {
      kind: 'retry',
      trouble: { kind: status === 429 ? 'throttled' : 'failing', status, message },
      waitMs: requestedWaitMs(res.headers, Date.now()),
    };
  }
  return { kind: 'refused', status, reason: message, config: isConfigRefusal(status) };
}

/** The events a 200 accounts for (ingested + failed, when the receiver says) and its per-event failures. */
function parseResult(text: string): { events: number | undefined; failures: string[] } {
  try {
    const v = JSON.parse(text) as { ingested?: unknown; failed?: unknown; failures?: { error?: unknown }[] };
    const events = typeof v.ingested === 'number' && typeof v.failed === 'number' ? v.ingested + v.failed : undefined;
    return { events, failures: Array.isArray(v.failures) ? v.failures.map((f) => String(f?.error ?? 'failed')) : [] };
  } catch {
    return { events: undefined, failures: [] };
  }
}

function errorMessage(text: string, status: number): string {
  try {
    const v = JSON.parse(text) as { message?: unknown };
    if (typeof v.message === 'string') return v.message;
  } catch {
    // not JSON
  }
  return text.slice(0, 500) || `HTTP ${status}`;
}

/**
 * A token goes into an HTTP header as it is: whitespace or a control character (a token file's trailing
 * newline or `\r`) either cannot be sent or is refused by the receiver, forever. Said at load time instead.
 */
export function tokenProblem(token: string): string | undefined {
  const bad = /[^\x21-\x7e]/.exec(token);
  if (!bad) return undefined;
  const ch = bad[0]!;
  const shown =
    ch === '\r'
      ? '\\r'
      : ch === '\n'
        ? '\\n'
        : ch === '\t'
          ? '\\t'
          : ch === ' '
            ? 'a space'
            : `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  return `contains ${shown} at character ${bad.index + 1}; a token is printable ASCII without spaces (a trailing newline or \\r from a file or an env file?)`;
}

/** An ingest URL the HTTP client can use: http or https, a host, no query or fragment. */
export function urlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `"${url}" is not a valid URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `"${url}" must start with http:// or https://`;
  if (!u.hostname) return `"${url}" has no host`;
  if (u.search || u.hash) return `"${url}" is the API root (e.g. https://api.axiom.co): no query or fragment`;
  // The sink adds the ingest path itself: a URL that has it would post to /v1/ingest/x/v1/ingest/d.
  if (/\/v1\/(ingest|datasets)(\/|$)/.test(u.pathname))
    return `"${url}" is the API root (e.g. ${u.origin}), without ${u.pathname}: the dataset is set apart`;
  return undefined;
}

type AxiomSettings = Pick<AxiomSinkOptions, 'url' | 'token' | 'compression' | 'timeoutMs'>;

const AXIOM_OPTIONS = {
  url: url()
    .required()
    .doc(
      'the API root (`http://` or `https://`, no query; a private CA is trusted with `NODE_EXTRA_CA_CERTS=/path/ca.pem` in the environment); 4 keep-alive connections',
    )
    .check(urlProblem),
  token: str().required().doc('an API token (printable ASCII, no spaces)').check(tokenProblem),
  // zstd: less CPU per byte and fewer bytes than gzip, as Axiom prefers (docs/benchmarks.md).
  compression: oneOf(['gzip', 'zstd', 'none'], 'zstd').doc(
    "`zstd` (level 1), `gzip` (level 1), `none`; both compress on libuv's thread pool, beside the event loop; batches are compressed once, as they are gathered, in 512 KiB stages (one gzip member or zstd frame each, which any decoder reads as one body), before they are queued, so the queue on disk holds compressed batches (about an eighth of the bytes), retries do not compress again, and no batch is held uncompressed in full",
  ),
  // A request gets a minute: a large batch to a far receiver.
  timeout: duration('60s').doc('per request'),
} satisfies OptionSpecs;

/** A request's time limit when the sink is built without one (tests, tools). */
const DEFAULT_TIMEOUT_MS = AXIOM_OPTIONS.timeout.read(undefined, 'axiom.timeout');

export const axiomSink: SinkSpec<AxiomSettings, typeof AXIOM_OPTIONS> = {
  type: 'axiom',
  summary: 'any Axiom-compatible ingest API (Axiom, or another Ferry)',
  options: AXIOM_OPTIONS,
  configure: (v) => ({ url: v.url, token: v.token, compression: v.compression, timeoutMs: v.timeout }),
  describe: (s) => ({ url: s.url }),
  create: (s, ctx) => {
    const problem = s.compression === 'zstd' ? zstdPoolProblem() : undefined;
    if (problem)
      ctx.log.warn(
        { sink: ctx.name, cause: problem },
        "zstd compresses on the event loop, slower: its binary for libuv's thread pool (@toondepauw/node-zstd) did not load",
      );
    return new AxiomSink({
      ...s,
      name: ctx.name,
      dataset: ctx.dataset,
      timestampField: ctx.timestampField,
      timestampFormat: ctx.timestampFormat,
      labels: ctx.labels,
    });
  },
};
