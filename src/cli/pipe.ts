/**
 * `ferry pipe`: ships the lines of stdin (`app | ferry pipe --dataset NAME`) and exits 0 only once every
 * line is acknowledged by the receiver (or stored, with --local); otherwise it exits 1 saying what
 * happened. It is the agent with one stdin source, built from the flags: the same transforms, batching,
 * disk queue (in a temporary directory) and sink.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { Pipeline } from '../agent/pipeline/pipeline.js';
import { PRESETS } from '../agent/transforms/multiline.js';
import { EventStore } from '../service/store/event-store.js';
import { buildConfig, ConfigError, type FerryConfig } from '../config/load.js';

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
  if (values.multiline && !(values.multiline in PRESETS)) throw new PipeError(`--multiline must be one of ${Object.keys(PRESETS).join(', ')}`);
  let url: string | undefined;
  let token: string | undefined;
  if (!values.local) {
    url = values.url ?? process.env.FERRY_URL;
    token = values.token ?? process.env.FERRY_TOKEN;
    if (!url || !token) throw new PipeError('pipe needs --url and --token (or FERRY_URL and FERRY_TOKEN), or --local');
  }

  const work = mkdtempSync(join(tmpdir(), 'ferry-pipe-'));
  const deadLetter = values['dead-letter'] ?? join(tmpdir(), `ferry-pipe-dead-letter-${process.pid}.ndjson`);
  const joining = values.multiline || values['multiline-start'];
  const topology = {
    service: { enabled: values.local },
    agent: { data_dir: work, api: { enabled: false } },
    sources: { stdin: { type: 'stdin', max_line_bytes: maxLineBytes } },
    transforms: {
      ...(joining ? { multiline: { type: 'multiline', inputs: ['stdin'], ...(values.multiline ? { preset: values.multiline } : { start: values['multiline-start'] }) } } : {}),
      parse: { type: 'parse', inputs: [joining ? 'multiline' : 'stdin'], parser: values.parser, ...(values.pattern ? { pattern: values.pattern } : {}) },
    },
    sinks: {
      pipe: {
        type: values.local ? 'local' : 'axiom', inputs: ['parse'], dataset, dead_letter: deadLetter, labels,
        ...(url ? { url, token, retry: { max_attempts: maxAttempts } } : {}),
        ...(values['timestamp-field'] ? { timestamp_field: values['timestamp-field'] } : {}),
        ...(values['timestamp-format'] ? { timestamp_format: values['timestamp-format'] } : {}),
      },
    },
  };
  let agent;
  try {
    agent = buildConfig(topology, {}).agent;
  } catch (e) {
    rmSync(work, { recursive: true, force: true });
    if (e instanceof ConfigError) throw new PipeError(e.message.replace(/^invalid config:\s*/, ''));
    throw e;
  }

  let store: EventStore | undefined;
  let pipeline: Pipeline | undefined;
  let failure: unknown;
  let failed!: () => void;
  const stopped = new Promise<void>((r) => (failed = r));
  try {
    if (values.local) {
      const cfg = loadConfig(values.config);
      store = await EventStore.open({
        dataDir: values['data-dir'] ?? process.env.FERRY_DATA_DIR ?? cfg.service.dataDir,
        memoryLimitBytes: cfg.service.memoryLimitBytes, checkpointThresholdBytes: cfg.service.checkpointThresholdBytes,
        threads: cfg.service.threads, maxFieldsPerDataset: cfg.service.maxFieldsPerDataset, defaultRetentionDays: cfg.service.retention.defaultDays,
        maxObjectBytes: 16 * 1024 * 1024,
      });
    }
    pipeline = await Pipeline.start(agent, {
      log: pino({ level: 'silent' }), store,
      onSinkError: (_sink, e) => {
        failure ??= e;
        failed();
      },
    });
    await Promise.race([pipeline.finished(), stopped]);
    // Without a deadline everything read is delivered, unless the sink gave up (--max-attempts): then
    // there is nothing to wait for.
    await pipeline.stop(failure === undefined ? Number.MAX_SAFE_INTEGER : Date.now() + 1000, failure === undefined);
    if (failure) throw failure;
    const sink = pipeline.sinks[0]!.sink.counters;
    if (sink.deadLettered > 0) {
      throw new PipeError(`${sink.deadLettered} event(s) were refused by the receiver; they are in ${deadLetter}`);
    }
    const read = pipeline.sources[0]!.counters;
    process.stderr.write(`ferry pipe: ${read.linesIn} line(s) delivered to ${dataset}${read.truncatedLines ? ` (${read.truncatedLines} cut to ${maxLineBytes} bytes)` : ''}\n`);
    return 0;
  } finally {
    if (store) await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}
