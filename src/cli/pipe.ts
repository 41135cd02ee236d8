/**
 * `ferry pipe`: ships the lines of stdin (`app | ferry pipe --dataset NAME`) and exits 0 only once every
 * line is acknowledged by the receiver (or stored, with --local); otherwise it exits 1 saying what
 * happened. Lines go through the agent's own path: parser, batcher, disk queue, delivery, sink.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createParser, type ParserConfig } from '../agent/parsers/index.js';
import { Batcher, DEFAULT_BATCH } from '../agent/pipeline/batcher.js';
import { Delivery } from '../agent/pipeline/delivery.js';
import type { Sink } from '../agent/sinks/sink.js';
import { DiskQueue } from '../agent/queue/disk-queue.js';
import { forEachLine } from '../agent/sources/lines.js';
import { Multiline, PRESETS } from '../agent/transforms/multiline.js';
import { AxiomSink } from '../agent/sinks/axiom.js';
import { DeadLetterFile } from '../agent/sinks/dead-letter.js';
import { LocalSink } from '../agent/sinks/local.js';
import { EventStore } from '../service/store/event-store.js';
import type { FerryConfig } from '../config/load.js';

const PARSERS = ['json', 'logfmt', 'plain', 'syslog', 'docker', 'cri', 'regex'];

export class PipeError extends Error {}

export async function pipe(argv: string[], loadConfig: (file?: string) => FerryConfig): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dataset: { type: 'string', short: 'd' },
      parser: { type: 'string', short: 'p', default: 'json' },
      pattern: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      local: { type: 'boolean', default: false },
      'data-dir': { type: 'string' },
      config: { type: 'string', short: 'c' },
      'max-attempts': { type: 'string', default: '10' },
      'max-line-bytes': { type: 'string', default: String(1024 * 1024) },
      'dead-letter': { type: 'string' },
      'timestamp-field': { type: 'string' },
      'timestamp-format': { type: 'string' },
      label: { type: 'string', short: 'l', multiple: true },
      multiline: { type: 'string' },
      'multiline-start': { type: 'string' },
      'add-host': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const dataset = values.dataset;
  if (!dataset) throw new PipeError('pipe needs --dataset NAME');
  if (!PARSERS.includes(values.parser!)) throw new PipeError(`--parser must be one of ${PARSERS.join(', ')}`);
  if (values.parser === 'regex' && !values.pattern) throw new PipeError('--parser regex needs --pattern with named groups');
  const parser = createParser((values.parser === 'regex' ? { type: 'regex', pattern: values.pattern } : { type: values.parser }) as ParserConfig);
  const maxLineBytes = Number(values['max-line-bytes']);
  const maxAttempts = Number(values['max-attempts']);
  if (!Number.isInteger(maxLineBytes) || maxLineBytes < 1) throw new PipeError('--max-line-bytes must be a whole number of bytes');
  if (!Number.isInteger(maxAttempts) || maxAttempts < 0) throw new PipeError('--max-attempts must be 0 (forever) or more');

  const labels: Record<string, string> = {};
  for (const l of values.label ?? []) {
    const at = l.indexOf('=');
    if (at < 1) throw new PipeError(`--label takes key=value, not "${l}"`);
    labels[l.slice(0, at)] = l.slice(at + 1);
  }
  if (values['add-host']) labels.host = hostname();
  let multiline: Multiline | undefined;
  const onText = async (text: string, truncated: boolean) => {
    const event = parser.parse(text);
    if (event === undefined) return;
    if (truncated) event.truncated = true;
    await batcher.add(JSON.stringify(event));
  };
  if (values.multiline || values['multiline-start']) {
    if (values.multiline && !(values.multiline in PRESETS)) throw new PipeError(`--multiline must be one of ${Object.keys(PRESETS).join(', ')}`);
    try {
      multiline = new Multiline({ preset: values.multiline as keyof typeof PRESETS | undefined, start: values['multiline-start'] }, (text) => onText(text, false));
    } catch (e) {
      throw new PipeError((e as Error).message);
    }
  }
  const timestampField = values['timestamp-field'];
  const timestampFormat = values['timestamp-format'];

  const work = mkdtempSync(join(tmpdir(), 'ferry-pipe-'));
  const deadLetter = new DeadLetterFile(values['dead-letter'] ?? join(tmpdir(), `ferry-pipe-dead-letter-${process.pid}.ndjson`));
  let sink: Sink;
  let store: EventStore | undefined;
  if (values.local) {
    const cfg = loadConfig(values.config);
    const dataDir = values['data-dir'] ?? process.env.FERRY_DATA_DIR ?? cfg.service.dataDir;
    store = await EventStore.open({
      dataDir, memoryLimitBytes: cfg.service.memoryLimitBytes, checkpointThresholdBytes: cfg.service.checkpointThresholdBytes,
      threads: cfg.service.threads, maxFieldsPerDataset: cfg.service.maxFieldsPerDataset, defaultRetentionDays: cfg.service.retention.defaultDays,
      maxObjectBytes: 16 * 1024 * 1024,
    });
    // Offline use has no service to create datasets with: a missing one is created.
    if (!store.hasDataset(dataset)) await store.createDataset({ name: dataset, who: 'ferry pipe' });
    sink = new LocalSink(store, dataset, deadLetter, { timestampField, timestampFormat, labels });
  } else {
    const url = values.url ?? process.env.FERRY_URL;
    const token = values.token ?? process.env.FERRY_TOKEN;
    if (!url || !token) throw new PipeError('pipe needs --url and --token (or FERRY_URL and FERRY_TOKEN), or --local');
    sink = new AxiomSink({ name: 'pipe', url, dataset, token, deadLetter, maxAttempts, timestampField, timestampFormat, labels });
  }

  const queue = await DiskQueue.open(join(work, 'queue'), { maxBytes: 256 * 1024 * 1024 });
  let failure: unknown;
  const delivery = new Delivery(queue, sink, (e) => (failure = e));
  delivery.start();
  const batcher = new Batcher(DEFAULT_BATCH, async (batch) => {
    await queue.push(batch);
  });
  try {
    const stats = await forEachLine(process.stdin, maxLineBytes, async (line, truncated) => {
      if (failure) throw failure;
      if (multiline && !truncated) await multiline.push(line);
      else await onText(line, truncated);
    });
    await multiline?.flush();
    await batcher.flush();
    while (queue.depthRecords > 0 && !failure) await new Promise((r) => setTimeout(r, 20));
    if (failure) throw failure;
    if (deadLetter.count > 0) {
      throw new PipeError(`${deadLetter.count} event(s) were refused by the receiver; they are in ${deadLetter.path}`);
    }
    process.stderr.write(`ferry pipe: ${stats.lines} line(s) delivered to ${dataset}${stats.truncated ? ` (${stats.truncated} cut to ${maxLineBytes} bytes)` : ''}\n`);
    return 0;
  } finally {
    await sink.close();
    await delivery.stop();
    await queue.close();
    if (store) await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}
