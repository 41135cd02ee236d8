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
import { DiskQueue } from '../agent/queue/disk-queue.js';
import { DeadLetterFile } from '../agent/delivery/dead-letter.js';
import { decode } from '../agent/delivery/encoding.js';
import { readRecord } from '../agent/delivery/record.js';
import { isConfigRefusal } from '../util/retry.js';
import { splitLines } from '../agent/delivery/batch.js';
import { parsers } from '../agent/parsers/index.js';
import { PRESETS } from '../agent/transforms/multiline.js';
import type { EventStore } from '../service/store/event-store.js';
import { chooseDuckdbAllocator } from './duckdb-allocator.js';
import { buildConfig, ConfigError, type FerryConfig } from './config.js';
import { parseDuration } from '../util/units.js';

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
      'shutdown-timeout': { type: 'string', default: '10s' },
    },
    strict: true,
  });
  const dataset = values.dataset;
  if (!dataset) throw new PipeError('pipe needs --dataset NAME');
  if (!parsers.types.includes(values.parser!))
    throw new PipeError(`--parser must be one of ${parsers.types.join(', ')}`);
  if (values.parser === 'regex' && !values.pattern)
    throw new PipeError('--parser regex needs --pattern with named groups');
  const maxLineBytes = Number(values['max-line-bytes']);
  const maxAttempts = Number(values['max-attempts']);
  if (!Number.isInteger(maxLineBytes) || maxLineBytes < 1)
    throw new PipeError('--max-line-bytes must be a whole number of bytes');
  if (!Number.isInteger(maxAttempts) || maxAttempts < 0)
    throw new PipeError('--max-attempts must be 0 (forever) or more');
  let shutdownMs: number;
  try {
    shutdownMs = Number(parseDuration(values['shutdown-timeout']!) / 1_000_000n);
  } catch (e) {
    throw new PipeError(`--shutdown-timeout: ${(e as Error).message}`);
  }

  const labels: Record<string, string> = {};
  for (const l of values.label ?? []) {
    const at = l.indexOf('=');
    if (at < 1) throw new PipeError(`--label takes key=value, not "${l}"`);
    labels[l.slice(0, at)] = l.slice(at + 1);
  }
  if (values['add-host']) labels.host = hostname();
  if (values.multiline && !(values.multiline in PRESETS))
    throw new PipeError(`--multiline must be one of ${Object.keys(PRESETS).join(', ')}`);
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
      ...(joining
        ? {
            multiline: {
              type: 'multiline',
              inputs: ['stdin'],
              ...(values.multiline ? { preset: values.multiline } : { start: values['multiline-start'] }),
            },
          }
        : {}),
      parse: {
        type: 'parse',
        inputs: [joining ? 'multiline' : 'stdin'],
        parser: values.parser,
        ...(values.pattern ? { pattern: values.pattern } : {}),
      },
    },
    sinks: {
      pipe: {
        type: values.local ? 'local' : 'axiom',
        inputs: ['parse'],
        dataset,
        dead_letter: deadLetter,
        labels,
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
    if (e instanceof ConfigError) {
      // The config's key path names the flag it came from: sinks.pipe.timestamp_format → --timestamp-format.
      throw new PipeError(
        e.message
          .replace(/^invalid config:\s*/, '')
          .replace(
            /(?:sources\.stdin|sinks\.pipe|transforms\.\w+)\.([a-z_]+)/,
            (_m, key: string) => `--${key.replace(/_/g, '-')}`,
          ),
      );
    }
    throw e;
  }

  let store: EventStore | undefined;
  let pipeline: Pipeline | undefined;
  let failure: unknown;
  /** The first refusal of the token or dataset: nothing more can be delivered in this run. */
  let refusal: { status: number; reason: string } | undefined;
  let interrupted: string | undefined;
  let stopNow!: () => void;
  const stopped = new Promise<void>((r) => (stopNow = r));
  const say = (msg: string) => process.stderr.write(`ferry pipe: ${msg}\n`);
  const onSignal = (sig: string) => {
    if (interrupted) {
      say(`${sig} again: exiting at once; what was not delivered is lost`);
      process.exit(1);
    }
    interrupted = sig;
    say(`${sig}: delivering what was read (up to ${values['shutdown-timeout']})`);
    stopNow();
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    if (values.local) {
      const cfg = loadConfig(values.config);
      chooseDuckdbAllocator(cfg.service.memoryLimitBytes);
      // Imported here, once the allocator is chosen: a pipe to a remote sink never loads DuckDB.
      const { EventStore } = await import('../service/store/event-store.js');
      store = await EventStore.open({
        dataDir: values['data-dir'] ?? process.env.FERRY_DATA_DIR ?? cfg.service.dataDir,
        memoryLimitBytes: cfg.service.memoryLimitBytes,
        checkpointThresholdBytes: cfg.service.checkpointThresholdBytes,
        threads: cfg.service.threads,
        maxFieldsPerDataset: cfg.service.maxFieldsPerDataset,
        defaultRetentionDays: cfg.service.retention.defaultDays,
        maxObjectBytes: 16 * 1024 * 1024,
      });
    }
    pipeline = await Pipeline.start(agent, {
      log: pino({ level: 'silent' }),
      store,
      refusal: 'dead-letter',
      // The first failed attempt is said at once, then a summary while it lasts (see SinkHealth).
      reportSink: (_level, msg, context) => {
        if (context.stopped) return; // the closing message says it, with where the events are kept
        const status = context.status as number | undefined;
        if (context.events !== undefined && status !== undefined && isConfigRefusal(status)) {
          refusal ??= { status, reason: String(context.reason) };
          stopNow();
        }
        // Events written to the dead-letter file are said once, by the closing message: how many, and where.
        if (context.events !== undefined && context.file !== undefined) return;
        say(msg);
      },
      onSinkError: (_sink, e) => {
        failure ??= e;
        stopNow();
      },
    });
    await Promise.race([pipeline.finished(), stopped]);
    // Without a deadline everything read is delivered, unless the sink gave up (--max-attempts) or the
    // receiver refused the token: then there is nothing to wait for.
    const deadline =
      failure !== undefined || refusal ? Date.now() : interrupted ? Date.now() + shutdownMs : Number.MAX_SAFE_INTEGER;
    await pipeline.stop(deadline, failure === undefined && !refusal);
    const runner = pipeline.deliveries[0]!;
    const sink = runner.chain.counters;
    // What is still queued goes to the dead-letter file too: the queue's directory is removed on exit.
    const why = refusal
      ? `not sent after ${refusal.reason}`
      : failure !== undefined
        ? `not delivered: ${(failure as Error).message}`
        : `not delivered before ${interrupted ?? 'exit'}`;
    const kept = await spillQueue(runner.o.queueDir, deadLetter, 'pipe', why, refusal?.status ?? 0);
    const read = pipeline.sources[0]!.counters;
    const problems: string[] = [];
    if (sink.deadLettered > 0)
      problems.push(`${sink.deadLettered} event(s) refused: ${runner.health.firstRefusal ?? 'see the file'}`);
    if (kept > 0) problems.push(`${kept} event(s) ${why}`);
    if (interrupted) {
      // Every event handed to the sink was delivered, refused (dead-lettered) or is kept from the queue.
      const notDelivered = kept + sink.deadLettered;
      say(
        `interrupted: ${runner.counters.eventsIn - notDelivered} event(s) delivered, ${notDelivered} not delivered${notDelivered ? ` (kept in ${deadLetter})` : ''}`,
      );
      return notDelivered > 0 ? 1 : 0;
    }
    if (problems.length > 0) {
      say(`${problems.join('; ')}; kept in ${deadLetter}`);
      return 1;
    }
    say(
      `${read.linesIn} line(s) delivered to ${dataset}${read.truncatedLines ? ` (${read.truncatedLines} cut to ${maxLineBytes} bytes)` : ''}`,
    );
    return 0;
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    if (store) await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Writes every batch left in a queue to the dead-letter file, one entry per event; returns the count. */
async function spillQueue(dir: string, file: string, sink: string, error: string, status: number): Promise<number> {
  const queue = await DiskQueue.open(dir, { maxBytes: Number.MAX_SAFE_INTEGER });
  const deadLetter = new DeadLetterFile(file);
  let count = 0;
  try {
    let pos = queue.ackedPosition;
    const signal = { closed: true }; // read what is there, never wait
    for (
      let records = await queue.next(16, pos, signal);
      records.length > 0;
      records = await queue.next(16, pos, signal)
    ) {
      for (const r of records) {
        const { body, encoding } = readRecord(r.tag, r.payload);
        const lines = splitLines(decode(body, encoding));
        await deadLetter.writeEvents(lines, sink, status, error);
        count += lines.length;
        pos = r.next;
      }
    }
  } finally {
    await queue.close();
  }
  return count;
}
