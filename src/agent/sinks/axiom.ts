/**
 * The `axiom` sink: POSTs NDJSON batches to {url}/v1/ingest/{dataset} of any Axiom-compatible API (Axiom,
 * or Ferry's own service), gzip-compressed over keep-alive connections, with a Bearer token.
 *
 * - Network errors, 408, 429 and 5xx are retried forever by default (maxAttempts 0), with exponential
 *   backoff and full jitter up to a cap, or as long as Retry-After / X-RateLimit-Reset ask.
 * - 401, 403 (the token) and 404 (the dataset) are the operator's to fix: the batch is retried the same
 *   way and the queue held, so fixing the config and reloading loses nothing (`ferry pipe`, which cannot
 *   wait for that, dead-letters them instead: refusal `dead-letter`).
 * - 413 splits the batch in two and sends each half; a single event still too large is dead-lettered.
 * - Other 4xx refuse the batch for good: its events go to the dead-letter file with status and error.
 * - A 200 whose `failures` list events is delivered; the failures go to the dead-letter file.
 * - Errors no retry can fix (a header value that cannot be sent, a URL the client cannot use) fail the
 *   send at once with their cause.
 * Every failure is reported to the sink's health, which logs it and shows it in /health. A batch counts
 * as delivered only when send() resolves; the caller acknowledges its queue after that.
 */
import { backoffMs, DEFAULT_BACKOFF, isConfigRefusal, isRetryable, requestedWaitMs, type BackoffOptions } from './retry.js';
import type { DeadLetterFile } from './dead-letter.js';
import { decode, encode, encodingOf, type Encoding } from './encoding.js';
import { HttpPoster } from '../../util/http-post.js';
import { countLines, newSinkCounters, ndjson, PermanentSinkError, splitLines, type Sink, type SinkCounters, type SinkSpec } from './sink.js';
import { SinkHealth, statusText, type Trouble } from './sink-health.js';

export interface AxiomSinkOptions {
  name: string;
  url: string;
  dataset: string;
  token: string;
  deadLetter: DeadLetterFile;
  backoff?: BackoffOptions;
  /** 0: retry forever (the default: data is never dropped for a passing outage). */
  maxAttempts?: number;
  timeoutMs?: number;
  /**
   * Where the receiver takes each event's time from, and in what format (`timestamp-field`,
   * `timestamp-format`): the receiver parses it, so the agent never parses times on its hot path.
   */
  timestampField?: string;
  timestampFormat?: string;
  /** Fields added to every event by the receiver (`X-Axiom-Event-Labels`): host, environment… */
  labels?: Record<string, string>;
  /** Body encoding (see encoding.ts); batches are compressed once, before they are queued. */
  compression?: Encoding;
  /** 401, 403 and 404: `hold` the queue and retry (the default), or `dead-letter` the batch like any refusal. */
  refusal?: 'hold' | 'dead-letter';
  /** Where failures are said; by default a health that tells nobody (tests). */
  health?: SinkHealth;
  /** Counters that outlive this sink (across reloads). */
  counters?: SinkCounters;
}

/** Node's errors for a request that cannot be made at all: the same request will fail the same way. */
const UNSENDABLE = new Set(['ERR_INVALID_CHAR', 'ERR_INVALID_HTTP_TOKEN', 'ERR_INVALID_URL', 'ERR_INVALID_PROTOCOL', 'ERR_UNESCAPED_CHARACTERS', 'ERR_HTTP_INVALID_HEADER_VALUE']);

/** A request gets a minute: a large batch to a far receiver. */
const DEFAULT_TIMEOUT_MS = 60_000;

export class AxiomSink implements Sink {
  readonly counters: SinkCounters;
  readonly health: SinkHealth;
  private readonly http: HttpPoster;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly o: AxiomSinkOptions) {
    this.counters = o.counters ?? newSinkCounters();
    this.health = o.health ?? new SinkHealth(o.name, () => undefined);
    const params = new URLSearchParams();
    if (o.timestampField) params.set('timestamp-field', o.timestampField);
    if (o.timestampFormat) params.set('timestamp-format', o.timestampFormat);
    const query = params.toString();
    const endpoint = new URL(`${o.url.replace(/\/+$/, '')}/v1/ingest/${encodeURIComponent(o.dataset)}${query ? `?${query}` : ''}`);
    this.http = new HttpPoster(endpoint, { connections: 4, idleMs: 30_000 });
  }

  get deadLetterPath(): string {
    return this.o.deadLetter.path;
  }

  /** Compresses part of a batch before it is queued: sends and retries reuse the queued form. */
  encode(part: Buffer): Promise<Buffer> {
    return encode(part, this.o.compression ?? 'gzip');
  }

  /**
   * Delivers a queued batch: compressed by encode(), or NDJSON (queued before it was, and compressed
   * now), or compressed otherwise under an earlier configuration (it goes as it is: a batch says its
   * encoding). Resolves once every event is delivered or dead-lettered.
   */
  async send(queued: Buffer): Promise<void> {
    if (queued.length === 0) return;
    const batch = encodingOf(queued) === 'none' ? await this.encode(queued) : queued;
    const { status, text } = await this.post(batch, encodingOf(batch));
    if (status === 413) {
      const lines = splitLines(decode(batch));
      if (lines.length === 1) {
        await this.deadLetter(lines, 413, statusText(413, 'the receiver refused this event as too large'));
        return;
      }
      const half = Math.ceil(lines.length / 2);
      // Each half goes as NDJSON: send() compresses it on the way.
      await this.send(ndjson(lines.slice(0, half)));
      await this.send(ndjson(lines.slice(half)));
      return;
    }
    if (status >= 200 && status < 300) {
      const result = parseResult(text);
      // The receiver's counts spare decompressing the batch to count its lines.
      this.counters.eventsOut += result.events ?? countLines(decode(batch));
      this.counters.bytesOut += batch.length;
      if (result.failures.length > 0) {
        await this.o.deadLetter.write(result.failures.map((f) => ({ time: new Date().toISOString(), sink: this.o.name, status, error: f.error })));
        this.counters.deadLettered += result.failures.length;
        this.health.deadLettered(result.failures.length, `failed at ingest: ${result.failures[0]!.error}`, this.o.deadLetter.path);
      }
      return;
    }
    await this.deadLetter(splitLines(decode(batch)), status, statusText(status, errorMessage(text, status)));
  }

  private async deadLetter(lines: string[], status: number, error: string): Promise<void> {
    await this.o.deadLetter.writeEvents(lines, this.o.name, status, error);
    this.counters.deadLettered += lines.length;
    this.health.deadLettered(lines.length, error, this.o.deadLetter.path, status);
  }

  /** POSTs until an answer that is not worth retrying (or the attempt limit). */
  private async post(body: Buffer, encoding: Encoding): Promise<{ status: number; text: string }> {
    const backoff = this.o.backoff ?? DEFAULT_BACKOFF;
    const hold = (this.o.refusal ?? 'hold') === 'hold';
    for (let attempt = 1; ; attempt++) {
      if (this.closed) throw new Error(`sink ${this.o.name} closed while delivering`);
      let waitMs: number | undefined;
      let trouble: Trouble;
      try {
        const res = await this.http.post(body, {
          authorization: `Bearer ${this.o.token}`,
          'content-type': 'application/x-ndjson',
          ...(encoding !== 'none' ? { 'content-encoding': encoding } : {}),
          'user-agent': 'ferry',
          ...(this.o.labels && Object.keys(this.o.labels).length ? { 'x-axiom-event-labels': JSON.stringify(this.o.labels) } : {}),
        }, this.o.timeoutMs ?? DEFAULT_TIMEOUT_MS);
        const held = hold && isConfigRefusal(res.status);
        if (!isRetryable(res.status) && !held) {
          if (res.status < 300) this.health.delivered();
          return { status: res.status, text: res.text };
        }
        waitMs = requestedWaitMs(res.headers, Date.now());
        const message = errorMessage(res.text, res.status);
        trouble = { kind: held ? 'refused' : res.status === 429 ? 'throttled' : 'failing', status: res.status, message };
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (err.code && UNSENDABLE.has(err.code)) {
          throw new PermanentSinkError(`sink ${this.o.name}: the request to ${this.o.url} cannot be sent (${err.message}); check the sink's url and token`);
        }
        trouble = { kind: 'unreachable', message: err.message };
      }
      if (this.closed) throw new Error(`sink ${this.o.name} closed while delivering (${trouble.message})`);
      if (this.o.maxAttempts && attempt >= this.o.maxAttempts) {
        throw new Error(`giving up after ${attempt} attempts: ${describeAttempt(trouble)}`);
      }
      this.health.failed(trouble, attempt, this.o.maxAttempts ?? 0);
      this.counters.retries++;
      await this.sleep(waitMs ?? backoffMs(attempt, backoff));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** Stops retrying (a send in progress rejects: its batch stays in the queue) and closes connections. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake?.();
    await this.http.close();
  }
}

/** The events a 200 accounts for (ingested + failed, when the receiver says) and its per-event failures. */
function parseResult(text: string): { events: number | undefined; failures: { error: string }[] } {
  try {
    const v = JSON.parse(text) as { ingested?: unknown; failed?: unknown; failures?: { error?: unknown }[] };
    const events = typeof v.ingested === 'number' && typeof v.failed === 'number' ? v.ingested + v.failed : undefined;
    return { events, failures: Array.isArray(v.failures) ? v.failures.map((f) => ({ error: String(f?.error ?? 'failed') })) : [] };
  } catch {
    return { events: undefined, failures: [] };
  }
}

function describeAttempt(t: Trouble): string {
  return t.status === undefined ? t.message : statusText(t.status, t.message);
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
  const shown = ch === '\r' ? '\\r' : ch === '\n' ? '\\n' : ch === '\t' ? '\\t' : ch === ' ' ? 'a space' : `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
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
  return undefined;
}

interface AxiomSettings {
  url: string;
  token: string;
  compression: Encoding;
  timeoutMs: number;
  retry: BackoffOptions & { maxAttempts: number };
}

export const axiomSink: SinkSpec<AxiomSettings> = {
  type: 'axiom',
  summary: 'any Axiom-compatible ingest API (Axiom, or another Ferry)',
  options: {
    url: {
      schema: { type: 'string', pattern: '^https?://' },
      doc: 'the API root (`http://` or `https://`, no query; a private CA is trusted with `NODE_EXTRA_CA_CERTS=/path/ca.pem` in the environment); 4 keep-alive connections',
    },
    token: { schema: { type: 'string', minLength: 1 }, doc: 'an API token (printable ASCII, no spaces)' },
    compression: {
      schema: { enum: ['gzip', 'zstd', 'none'] },
      doc: '`gzip` (level 1, off the event loop), `zstd`, `none`; batches are compressed once, as they are gathered, in 512 KiB stages (one gzip member or zstd frame each, which any decoder reads as one body), before they are queued, so the queue on disk holds compressed batches (about an eighth of the bytes), retries do not compress again, and no batch is held uncompressed in full',
      default: '`gzip`',
    },
    timeout: { schema: { type: 'string' }, doc: 'per request', default: '`60s`' },
    retry: {
      schema: {
        type: 'object', additionalProperties: false,
        properties: { initial_backoff: { type: 'string' }, max_backoff: { type: 'string' }, max_attempts: { type: 'integer', minimum: 0 } },
      },
      doc: '`initial_backoff`, `max_backoff`, `max_attempts`: network errors, 401, 403, 404, 408, 429 and 5xx are retried with exponential backoff and full jitter, honouring `Retry-After` and `X-RateLimit-Reset`; 413 splits the batch; `0` attempts = forever',
      default: '`250ms`, `30s`, `0`',
    },
  },
  required: ['url', 'token'],
  configure(o) {
    const token = o.get<string>('token')!;
    const url = o.get<string>('url')!;
    const bad = tokenProblem(token);
    if (bad) o.fail('token', bad);
    const badUrl = urlProblem(url);
    if (badUrl) o.fail('url', badUrl);
    const r = o.nested('retry');
    return {
      url, token,
      compression: o.or<Encoding>('compression', 'gzip'),
      timeoutMs: o.ms('timeout', DEFAULT_TIMEOUT_MS),
      retry: { initialMs: r.ms('initial_backoff', DEFAULT_BACKOFF.initialMs), maxMs: r.ms('max_backoff', DEFAULT_BACKOFF.maxMs), maxAttempts: r.or('max_attempts', 0) },
    };
  },
  describe: (s) => ({ url: s.url }),
  create: (s, ctx) => new AxiomSink({
    name: ctx.name, url: s.url, dataset: ctx.dataset, token: s.token, deadLetter: ctx.deadLetter,
    backoff: { initialMs: s.retry.initialMs, maxMs: s.retry.maxMs }, maxAttempts: s.retry.maxAttempts, timeoutMs: s.timeoutMs,
    timestampField: ctx.timestampField, timestampFormat: ctx.timestampFormat, labels: ctx.labels, compression: s.compression,
    refusal: ctx.refusal, counters: ctx.counters, health: ctx.health,
  }),
};
