/**
 * The `axiom` sink: POSTs NDJSON batches to {url}/v1/ingest/{dataset} of any Axiom-compatible API (Axiom,
 * or Ferry's own service), gzip-compressed over keep-alive connections, with a Bearer token.
 *
 * - Network errors, 408, 429 and 5xx are retried forever by default (maxAttempts 0), with exponential
 *   backoff and full jitter up to a cap, or as long as Retry-After / X-RateLimit-Reset ask.
 * - 413 splits the batch in two and sends each half; a single event still too large is dead-lettered.
 * - Other 4xx refuse the batch for good: its events go to the dead-letter file with status and error.
 * - A 200 whose `failures` list events is delivered; the failures go to the dead-letter file.
 * A batch counts as delivered only when send() resolves; the caller acknowledges its queue after that.
 */
import { promisify } from 'node:util';
import { constants as zlib, gzip } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { Agent, request } from 'undici';
import { backoffMs, isRetryable, requestedWaitMs, type BackoffOptions } from './retry.js';
import type { DeadLetterFile } from './dead-letter.js';
import { countLines, ndjson, splitLines, type Sink, type SinkCounters } from './sink.js';

const gzipAsync = promisify(gzip);

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
  /**
   * Body encoding. gzip at level 1 (the default) runs on libuv's thread pool, off the event loop, and
   * still shrinks JSON logs about 8×; zstd (level 3) is smaller for the same CPU but runs on the loop.
   */
  compression?: 'gzip' | 'zstd' | 'none';
}

export class AxiomSink implements Sink {
  readonly counters: SinkCounters = { eventsOut: 0, bytesOut: 0, retries: 0, deadLettered: 0 };
  private readonly agent: Agent;
  private readonly endpoint: string;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly o: AxiomSinkOptions) {
    this.agent = new Agent({ keepAliveTimeout: 30_000, connections: 4 });
    const params = new URLSearchParams();
    if (o.timestampField) params.set('timestamp-field', o.timestampField);
    if (o.timestampFormat) params.set('timestamp-format', o.timestampFormat);
    const query = params.toString();
    this.endpoint = `${o.url.replace(/\/+$/, '')}/v1/ingest/${encodeURIComponent(o.dataset)}${query ? `?${query}` : ''}`;
  }

  /** Delivers a batch (NDJSON). Resolves once every event is delivered or dead-lettered. */
  async send(batch: Buffer): Promise<void> {
    if (batch.length === 0) return;
    const body = await this.encode(batch);
    const { status, text } = await this.post(body);
    if (status === 413) {
      const lines = splitLines(batch);
      if (lines.length === 1) {
        await this.deadLetter(lines, 413, 'the receiver refused this event as too large (413)');
        return;
      }
      const half = Math.ceil(lines.length / 2);
      await this.send(ndjson(lines.slice(0, half)));
      await this.send(ndjson(lines.slice(half)));
      return;
    }
    if (status >= 200 && status < 300) {
      this.counters.eventsOut += countLines(batch);
      this.counters.bytesOut += body.length;
      const failures = parseFailures(text);
      if (failures.length > 0) {
        await this.o.deadLetter.write(failures.map((f) => ({ time: new Date().toISOString(), sink: this.o.name, status, error: f.error })));
        this.counters.deadLettered += failures.length;
      }
      return;
    }
    await this.deadLetter(splitLines(batch), status, errorMessage(text, status));
  }

  private get encoding(): string | undefined {
    const c = this.o.compression ?? 'gzip';
    return c === 'none' ? undefined : c;
  }

  private async encode(raw: Buffer): Promise<Buffer> {
    switch (this.o.compression ?? 'gzip') {
      case 'gzip': return gzipAsync(raw, { level: zlib.Z_BEST_SPEED, chunkSize: 256 * 1024 });
      case 'zstd': return zstdCompress(raw);
      case 'none': return raw;
    }
  }

  private async deadLetter(lines: string[], status: number, error: string): Promise<void> {
    const time = new Date().toISOString();
    await this.o.deadLetter.write(lines.map((l) => ({ time, sink: this.o.name, status, error, event: safeJson(l) })));
    this.counters.deadLettered += lines.length;
  }

  /** POSTs until an answer that is not worth retrying (or the attempt limit). */
  private async post(body: Buffer): Promise<{ status: number; text: string }> {
    const backoff = this.o.backoff ?? { initialMs: 250, maxMs: 30_000 };
    for (let attempt = 1; ; attempt++) {
      if (this.closed) throw new Error(`sink ${this.o.name} closed while delivering`);
      let waitMs: number | undefined;
      let lastError: string;
      try {
        const res = await request(this.endpoint, {
          method: 'POST',
          dispatcher: this.agent,
          headers: {
            authorization: `Bearer ${this.o.token}`,
            'content-type': 'application/x-ndjson',
            ...(this.encoding ? { 'content-encoding': this.encoding } : {}),
            'user-agent': 'ferry',
            ...(this.o.labels && Object.keys(this.o.labels).length ? { 'x-axiom-event-labels': JSON.stringify(this.o.labels) } : {}),
          },
          body,
          headersTimeout: this.o.timeoutMs ?? 60_000,
          bodyTimeout: this.o.timeoutMs ?? 60_000,
        });
        const text = await res.body.text();
        if (!isRetryable(res.statusCode)) return { status: res.statusCode, text };
        waitMs = requestedWaitMs(res.headers, Date.now());
        lastError = `${res.statusCode} ${errorMessage(text, res.statusCode)}`;
      } catch (e) {
        lastError = (e as Error).message;
      }
      if (this.closed) throw new Error(`sink ${this.o.name} closed while delivering (${lastError})`);
      if (this.o.maxAttempts && attempt >= this.o.maxAttempts) throw new Error(`sink ${this.o.name}: giving up after ${attempt} attempts: ${lastError}`);
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
    await this.agent.close();
  }
}

function parseFailures(text: string): { error: string }[] {
  try {
    const v = JSON.parse(text) as { failures?: { error?: unknown }[] };
    return Array.isArray(v.failures) ? v.failures.map((f) => ({ error: String(f?.error ?? 'failed') })) : [];
  } catch {
    return [];
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

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return line;
  }
}
