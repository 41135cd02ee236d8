/**
 * OTLP bodies turned into events off the event loop, for the service's /v1/traces and /v1/logs and the
 * agent's `otlp` source: what decoding takes depends on a body's structure more than on its size (a few
 * kilobytes of gzip can hold millions of empty messages), so it runs in a worker thread with a heap and a
 * time limit of its own. A body that passes either is refused (413) and the worker is started afresh; the
 * process and its other requests go on. Bodies are decoded one at a time, in order, and one that waits too
 * long behind others is refused as busy (503); the worker is started when first needed and stopped when idle.
 */
import { Worker } from 'node:worker_threads';
import { IngestBodyError } from './errors.js';
import type { OtlpEncoding, OtlpSignal } from './otlp-http.js';
import type { DecodeAnswer, DecodeRequest } from './otlp-worker.js';
import type { MetricLines } from './otlp-metrics.js';
import { PointColumns } from './point-columns.js';
import { type SeriesEntry, SeriesMirror, SeriesMirrorLost } from './series-mirror.js';

/** An answer with events, and a metrics body's series as the mirror read them. */
type Decoded = Extract<DecodeAnswer, { events: string[] }> & { entries?: SeriesEntry[] };

export interface OtlpDecoderLimits {
  /** The worker's heap (its old generation), in MiB. */
  heapMb: number;
  /** How long one body may take. */
  timeLimitMs: number;
  /** The worker stops after this long without a body. */
  idleMs: number;
  /** A body that waits longer than this for the bodies before it is refused as busy (503: retry). */
  maxWaitMs: number;
}

export const OTLP_DECODER_LIMITS: OtlpDecoderLimits = {
  heapMb: 256,
  timeLimitMs: 15_000,
  idleMs: 30_000,
  maxWaitMs: 15_000,
};

/** What a worker may take to load its definitions, on top of a body's time limit, before it is given up. */
const STARTUP_MS = 10_000;

// Run from the TypeScript sources (the tests), the worker is the compiled one: a worker runs JavaScript only.
const WORKER_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/src/ingest/otlp-worker.js', import.meta.url)
  : new URL('./otlp-worker.js', import.meta.url);

interface Job {
  request: Omit<DecodeRequest, 'id'>;
  queuedAt: number;
  resolve: (answer: Decoded) => void;
  reject: (e: Error) => void;
}

export class OtlpDecoder {
  private worker?: Worker;
  private readonly waiting: Job[] = [];
  private current?: { id: number; job: Job; timer?: NodeJS.Timeout };
  /** Whether the worker has loaded what it decodes with (bodies are timed from then). */
  private ready = false;
  private seq = 0;
  private idle?: NodeJS.Timeout;
  /** The series the running worker sent (series-mirror.ts). */
  private mirror = new SeriesMirror();

  constructor(private readonly limits: OtlpDecoderLimits = OTLP_DECODER_LIMITS) {}

  /** Whether the worker is running (tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** A metrics body's series and points (see otlpMetricLines), or its refusal as an IngestBodyError. */
  async decodeMetrics(body: Buffer, maxBytes: number): Promise<MetricLines> {
    const answer = await this.answer('metrics', body, 'protobuf', maxBytes);
    const counts = JSON.parse(answer.events[0]!) as Pick<MetricLines, 'points' | 'rejected' | 'firstRejection'>;
    const points = answer.points ?? { buffer: new ArrayBuffer(0), count: 0 };
    return { ...counts, series: answer.entries ?? [], columns: new PointColumns(points.buffer, points.count) };
  }

  /** The body's events (see otlpEvents), or its refusal as an IngestBodyError. */
  async decode(signal: OtlpSignal, body: Buffer, encoding: OtlpEncoding, maxBytes: number): Promise<string[]> {
    return (await this.answer(signal, body, encoding, maxBytes)).events;
  }

  private answer(
    signal: OtlpSignal | 'metrics',
    body: Buffer,
    encoding: OtlpEncoding,
    maxBytes: number,
  ): Promise<Decoded> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ request: { signal, encoding, maxBytes, body }, queuedAt: Date.now(), resolve, reject });
      this.next();
    });
  }

  private next(): void {
    if (this.current) return;
    clearTimeout(this.idle);
    // Bodies queued behind a slow one are not kept waiting past maxWaitMs: their senders retry.
    let job: Job | undefined;
    while ((job = this.waiting.shift()) && Date.now() - job.queuedAt > this.limits.maxWaitMs)
      job.reject(new IngestBodyError('busy', 'the OTLP decoder is busy with other bodies; retry shortly'));
    if (!job) return;
    const id = ++this.seq;
    this.current = { id, job };
    try {
      const worker = this.worker ?? this.start();
      // Until the worker has loaded, it may take STARTUP_MS more; the body's own limit starts then.
      this.time(this.ready ? 0 : STARTUP_MS);
      // A copy the worker owns: the request keeps its body until it is answered.
      const body = new Uint8Array(job.request.body);
      worker.postMessage({ ...job.request, id, body } satisfies DecodeRequest, [body.buffer]);
    } catch (e) {
      this.stop(new Error(`the OTLP decoder could not start: ${(e as Error).message}`));
    }
  }

  /** (Re)starts the time limit of the body being decoded, `extraMs` beyond it. */
  private time(extraMs: number): void {
    if (!this.current) return;
    clearTimeout(this.current.timer);
    this.current.timer = setTimeout(
      () =>
        this.stop(
          new IngestBodyError(
            'too_large',
            `decoding this body took more than ${this.limits.timeLimitMs / 1000}s; send smaller exports`,
          ),
        ),
      this.limits.timeLimitMs + extraMs,
    );
  }

  private start(): Worker {
    const worker = new Worker(WORKER_URL, {
      resourceLimits: { maxOldGenerationSizeMb: this.limits.heapMb, maxYoungGenerationSizeMb: 16 },
    });
    worker.unref();
    this.ready = false;
    // A new worker numbers its series afresh.
    this.mirror = new SeriesMirror();
    worker.on('message', (a: DecodeAnswer) => this.answered(worker, a));
    worker.on('error', (e: Error & { code?: string }) => {
      if (worker === this.worker)
        this.stop(
          // Out of memory before it was ready is the decoder's failure, not the body's.
          e.code === 'ERR_WORKER_OUT_OF_MEMORY' && this.ready
            ? new IngestBodyError(
                'too_large',
                `decoding this body takes more than the ${this.limits.heapMb} MiB its decoder may hold; send smaller exports`,
              )
            : new Error(`the OTLP decoder failed: ${e.message}`),
        );
    });
    worker.on('messageerror', (e) => {
      if (worker === this.worker) this.stop(new Error(`the OTLP decoder's answer could not be read: ${e.message}`));
    });
    worker.on('exit', () => {
      if (worker === this.worker) this.stop(new Error('the OTLP decoder stopped'));
    });
    this.worker = worker;
    return worker;
  }

  private answered(worker: Worker, a: DecodeAnswer): void {
    if (worker !== this.worker) return;
    if ('ready' in a) {
      this.ready = true;
      return this.time(0);
    }
    // The worker's series are read from every answer, in order, whoever waits for it: it counts them sent.
    let entries: SeriesEntry[] | undefined;
    if ('events' in a && a.series) {
      try {
        entries = this.mirror.receive(a.series);
      } catch (e) {
        // Out of step (never seen): a new worker starts with a new mirror, and the sender retries.
        const why =
          e instanceof SeriesMirrorLost ? e.message : `its series could not be read (${(e as Error).message})`;
        return this.stop(new IngestBodyError('busy', `${why}; the OTLP decoder was restarted, retry shortly`));
      }
    }
    if (a.id !== this.current?.id) return;
    const { job, timer } = this.current;
    clearTimeout(timer);
    this.current = undefined;
    if ('events' in a) job.resolve({ ...a, entries });
    else if ('refusal' in a) job.reject(new IngestBodyError(a.refusal.kind, a.refusal.message));
    else job.reject(new Error(`the OTLP decoder failed: ${a.failure}`));
    this.settle();
  }

  /** Stops the worker, refusing the body it was decoding with `e`. */
  private stop(e: Error): void {
    const worker = this.worker;
    this.worker = undefined;
    this.mirror = new SeriesMirror();
    void worker?.terminate();
    if (this.current) {
      clearTimeout(this.current.timer);
      this.current.job.reject(e);
      this.current = undefined;
    }
    this.settle();
  }

  private settle(): void {
    clearTimeout(this.idle);
    if (this.waiting.length > 0) return this.next();
    if (!this.worker) return;
    this.idle = setTimeout(() => {
      const worker = this.worker;
      this.worker = undefined;
      // What it sent goes with it: an idle decoder holds nothing.
      this.mirror = new SeriesMirror();
      void worker?.terminate();
    }, this.limits.idleMs);
    this.idle.unref();
  }
}

/** The process's decoder, shared by the service and the agent. */
export const otlpDecoder = new OtlpDecoder();
