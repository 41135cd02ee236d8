import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SendChain } from '../../../../src/agent/delivery/send-chain.js';
import { DeadLetterFile } from '../../../../src/agent/delivery/dead-letter.js';
import { ndjson, splitLines } from '../../../../src/agent/delivery/batch.js';
import type { SendOutcome, Sink } from '../../../../src/agent/sinks/sink.js';
import { SinkHealth } from '../../../../src/agent/delivery/sink-health.js';
import { tempDir } from '../../../support/helpers.js';

/** A sink that only sends: it answers each attempt from a script, and keeps what it delivered. */
class ScriptedSink implements Sink {
  readonly delivered: string[] = [];
  attempts = 0;
  constructor(private readonly answer: (lines: string[], attempt: number) => SendOutcome) {}
  async send(batch: Buffer): Promise<SendOutcome> {
    const lines = splitLines(batch);
    const outcome = this.answer(lines, ++this.attempts);
    if (outcome.kind === 'delivered' || outcome.kind === 'partly-refused') this.delivered.push(...lines);
    return outcome;
  }
  async close(): Promise<void> {}
}

const events = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ i }));

function chain(sink: Sink, o: { maxAttempts?: number; refusal?: 'hold' | 'dead-letter' } = {}) {
  const deadLetter = new DeadLetterFile(join(tempDir('ferry-chain-'), 'dead.ndjson'));
  const reports: string[] = [];
  const health = new SinkHealth('s', (level, msg) => reports.push(`${level} ${msg}`));
  const c = new SendChain(sink, { name: 's', deadLetter, backoff: { initialMs: 1, maxMs: 5 }, health, ...o });
  const dead = (): Record<string, unknown>[] => {
    try {
      return readFileSync(deadLetter.path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    } catch {
      return []; // nothing dead-lettered yet: no file
    }
  };
  return { c, reports, health, dead };
}

describe('the send chain around every sink', () => {
  it('retries what the sink says to try later, after the wait it asks for, and counts the retries', async () => {
    const sink = new ScriptedSink((_l, n) =>
      n < 3
        ? { kind: 'retry', trouble: { kind: 'throttled', status: 429, message: 'slow down' }, waitMs: 60 }
        : { kind: 'delivered' },
    );
    const { c, reports, health } = chain(sink);
    const started = Date.now();
    await c.send(ndjson(events(5)), 'none');
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
    expect(sink.delivered).toEqual(events(5));
    expect(c.counters).toMatchObject({ eventsOut: 5, retries: 2, deadLettered: 0 });
    expect(reports[0]).toBe('warn receiver throttling: 429 Too Many Requests: slow down, retrying (1/∞)');
    expect(reports.at(-1)).toMatch(/^info delivering again after/);
    expect(health.state).toBe('ok');
  });

  it('splits what is too large until it fits, and dead-letters a single event that never does', async () => {
    const sink = new ScriptedSink((lines) =>
      lines.length > 2 || lines.some((l) => l.includes('"i":6')) ? { kind: 'too-large' } : { kind: 'delivered' },
    );
    const { c, dead } = chain(sink);
    await c.send(ndjson(events(9)), 'none');
    expect([...sink.delivered].sort()).toEqual(
      events(9)
        .filter((e) => !e.includes('"i":6'))
        .sort(),
    );
    expect(dead()).toEqual([
      {
        time: expect.any(String),
        sink: 's',
        status: 413,
        error: '413 Payload Too Large: the receiver refused this event as too large',
        event: { i: 6 },
      },
    ]);
    expect(c.counters).toMatchObject({ eventsOut: 8, deadLettered: 1 });
  });

  it('holds the queue on a refusal the operator can fix, and dead-letters it for ferry pipe', async () => {
    let fixed = false;
    const refusing = () =>
      new ScriptedSink(() =>
        fixed ? { kind: 'delivered' } : { kind: 'refused', status: 401, reason: 'invalid token', config: true },
      );
    const held = chain(refusing());
    const sending = held.c.send(ndjson(events(2)), 'none');
    await new Promise((r) => setTimeout(r, 50));
    expect(held.health.state).toBe('refused');
    expect(held.dead()).toEqual([]);
    fixed = true;
    await sending;
    expect(held.c.counters).toMatchObject({ eventsOut: 2, deadLettered: 0 });

    fixed = false;
    const piped = chain(refusing(), { refusal: 'dead-letter' });
    await piped.c.send(ndjson(events(2)), 'none');
    expect(piped.dead().map((d) => [d.status, d.error])).toEqual([
      [401, '401 Unauthorized: invalid token'],
      [401, '401 Unauthorized: invalid token'],
    ]);
  });

  it('dead-letters a refused batch and the failures of a partly refused one, with their reasons', async () => {
    const sink = new ScriptedSink((lines) =>
      lines.length === 1
        ? { kind: 'refused', status: 400, reason: 'bad body', config: false }
        : { kind: 'partly-refused', events: lines.length, failures: ['event 2: no'] },
    );
    const { c, dead, reports } = chain(sink);
    await c.send(ndjson(events(1)), 'none');
    await c.send(ndjson(events(3)), 'none');
    expect(dead().map((d) => [d.status, d.error, d.event])).toEqual([
      [400, '400 Bad Request: bad body', { i: 0 }],
      [200, 'event 2: no', undefined],
    ]);
    expect(c.counters).toMatchObject({ eventsOut: 3, deadLettered: 2 });
    expect(reports).toHaveLength(2);
  });

  it('gives up after the attempt limit, saying the last trouble, and stops at once on what cannot be sent', async () => {
    const { c } = chain(
      new ScriptedSink(() => ({ kind: 'retry', trouble: { kind: 'unreachable', message: 'connect ECONNREFUSED' } })),
      { maxAttempts: 3 },
    );
    await expect(c.send(ndjson(events(1)), 'none')).rejects.toThrow('giving up after 3 attempts: connect ECONNREFUSED');
    const closing = chain(
      new ScriptedSink(() => ({
        kind: 'retry',
        trouble: { kind: 'failing', status: 503, message: 'down' },
        waitMs: 10_000,
      })),
    );
    const pending = closing.c.send(ndjson(events(1)), 'none');
    await new Promise((r) => setTimeout(r, 20));
    await closing.c.close();
    await expect(pending).rejects.toThrow(/closed while delivering/);
  });
});

describe("a sink's health", () => {
  it('stays failed once delivery stopped, whatever a batch still in flight meets', () => {
    const reports: string[] = [];
    const health = new SinkHealth('s', (level, msg) => reports.push(`${level} ${msg}`));
    health.failed({ kind: 'failing', status: 503, message: 'down' }, 1, 0);
    expect(health.state).toBe('retrying');
    health.gaveUp(new Error('dataset "logs" would have 204 fields'));
    health.delivered();
    health.failed({ kind: 'unreachable', message: 'connect ECONNREFUSED' }, 2, 0);
    expect(health.state).toBe('failed');
    expect(health.lastError).toContain('204 fields');
    expect(reports.at(-1)).toMatch(/^error stopped delivering/);
  });
});
