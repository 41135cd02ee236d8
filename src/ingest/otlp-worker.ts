/**
 * The worker thread that turns OTLP bodies into events for otlp-decoder.ts: one body at a time, each answered
 * with its events or with why it was refused.
 */
import { parentPort } from 'node:worker_threads';
import { IngestBodyError } from './errors.js';
import { otlpEvents, type OtlpEncoding, type OtlpSignal } from './otlp.js';
import { described, otlpMetricLines } from './otlp-metrics.js';
import { type ShippedSeries, SeriesShipper } from './series-mirror.js';

export interface DecodeRequest {
  id: number;
  /**
   * Metrics are answered with a line of counts, the body's series as series-mirror.ts ships them (a series
   * the main thread was sent before crosses as its number), and the points' columns (otlp-metrics.ts).
   */
  signal: OtlpSignal | 'metrics';
  encoding: OtlpEncoding;
  maxBytes: number;
  body: Uint8Array;
}

export type DecodeAnswer =
  | { ready: true }
  | { id: number; events: string[]; points?: { buffer: ArrayBuffer; count: number }; series?: ShippedSeries }
  | { id: number; refusal: { kind: IngestBodyError['kind']; message: string } }
  | { id: number; failure: string };

const shipper = new SeriesShipper();

parentPort?.on('message', (r: DecodeRequest) => {
  let answer: DecodeAnswer;
  const transfer: ArrayBuffer[] = [];
  try {
    const body = Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength);
    if (r.signal === 'metrics') {
      const m = otlpMetricLines(body, r.maxBytes);
      const head = JSON.stringify({ points: m.points, rejected: m.rejected, firstRejection: m.firstRejection });
      const series = shipper.ship(m.series, described.epochStart);
      answer = { id: r.id, events: [head], points: { buffer: m.columns.buffer, count: m.columns.count }, series };
      transfer.push(m.columns.buffer, series.gids.buffer as ArrayBuffer);
    } else answer = { id: r.id, events: otlpEvents(r.signal, body, r.encoding, r.maxBytes) };
  } catch (e) {
    answer =
      e instanceof IngestBodyError
        ? { id: r.id, refusal: { kind: e.kind, message: e.message } }
        : { id: r.id, failure: (e as Error).stack ?? String(e) };
  }
  parentPort!.postMessage(answer, transfer);
});

// Bodies are timed from here: loading the definitions is not part of any body's time.
parentPort?.postMessage({ ready: true } satisfies DecodeAnswer);
