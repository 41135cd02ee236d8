/**
 * OTLP bodies as events, item by item: random exports give the same events from protobuf (with its levels
 * in any order on the wire, repeated and unknown fields) as from JSON; malformed protobuf is a 400 naming
 * why; what the conversion holds is charged to the request's budget and given back; a long conversion lets
 * the event loop in.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { IngestBodyError } from '../../../src/ingest/errors.js';
import { OtlpDecoder } from '../../../src/ingest/otlp-decoder.js';
import { eventsCost, otlpEvents } from '../../../src/ingest/otlp.js';
import { testSeed } from '../../support/helpers.js';
import { emptyFields, emptySpans, protoField } from '../../support/otel.js';

interface Type {
  fromObject(o: object): unknown;
  encode(m: unknown): { finish(): Uint8Array };
}
const proto = (
  createRequire(import.meta.url)('otlp-definitions/build/src/generated/root.js') as {
    opentelemetry: {
      proto: {
        collector: {
          trace: { v1: { ExportTraceServiceRequest: Type } };
          logs: { v1: { ExportLogsServiceRequest: Type } };
        };
        trace: { v1: { ResourceSpans: Type; ScopeSpans: Type } };
      };
    };
  }
).opentelemetry.proto;

const encode = (type: Type, o: object) => Buffer.from(type.encode(type.fromObject(o)).finish());

const field = protoField;

/** Ids as the JSON mapping writes them (hex), turned into bytes for fromObject. */
function withBytes(o: unknown): unknown {
  if (Array.isArray(o)) return o.map(withBytes);
  if (!o || typeof o !== 'object') return o;
  return Object.fromEntries(
    Object.entries(o).map(([k, v]) => [
      k,
      ['traceId', 'spanId', 'parentSpanId'].includes(k) ? Buffer.from(v as string, 'hex') : withBytes(v),
    ]),
  );
}

function randomExport(rnd: () => number) {
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const hex = (bytes: number) =>
    Array.from({ length: bytes }, () =>
      Math.floor(rnd() * 256)
        .toString(16)
        .padStart(2, '0'),
    ).join('');
  const value = (depth: number): object =>
    pick([
      () => ({ stringValue: pick(['', 'a', 'GET /cart', 'ü ✓']) }),
      () => ({ intValue: String(Math.floor(rnd() * 1e6) - 5e5) }),
      () => ({ doubleValue: rnd() * 100 }),
      () => ({ boolValue: rnd() < 0.5 }),
      () => (depth < 2 ? { arrayValue: { values: [value(depth + 1), value(depth + 1)] } } : { stringValue: 'x' }),
      () => (depth < 2 ? { kvlistValue: { values: attrs(depth + 1) } } : { boolValue: true }),
    ])();
  const attrs = (depth = 0) =>
    Array.from({ length: Math.floor(rnd() * 4) }, () => ({
      key: pick(['k', 'http.method', 'a.b', 'k']),
      value: value(depth),
    }));
  const time = () => String(1_700_000_000_000_000_000n + BigInt(Math.floor(rnd() * 1e12)));
  const span = () => ({
    traceId: hex(16),
    spanId: hex(8),
    ...(rnd() < 0.5 ? { parentSpanId: hex(8) } : {}),
    name: pick(['GET /cart', 'SELECT', '']),
    kind: Math.floor(rnd() * 6),
    startTimeUnixNano: time(),
    endTimeUnixNano: time(),
    attributes: attrs(),
    events: rnd() < 0.3 ? [{ timeUnixNano: time(), name: 'cache miss', attributes: attrs() }] : [],
    links: rnd() < 0.3 ? [{ traceId: hex(16), spanId: hex(8), attributes: attrs() }] : [],
    ...(rnd() < 0.5 ? { status: { code: Math.floor(rnd() * 3), message: pick(['', 'reset']) } } : {}),
  });
  const record = () => ({
    timeUnixNano: time(),
    severityNumber: Math.floor(rnd() * 24),
    severityText: pick(['', 'WARN']),
    body: value(0),
    attributes: attrs(),
    ...(rnd() < 0.5 ? { traceId: hex(16), spanId: hex(8) } : {}),
  });
  const level = <T>(make: () => T) => Array.from({ length: Math.floor(rnd() * 3) }, make);
  const resource = () =>
    rnd() < 0.8
      ? {
          resource: {
            attributes: [{ key: 'service.name', value: { stringValue: pick(['cart', 'shop']) } }, ...attrs()],
          },
        }
      : {};
  const scope = () => (rnd() < 0.8 ? { scope: { name: pick(['lib', '']), version: pick(['1.0', '']) } } : {});
  return {
    traces: {
      resourceSpans: level(() => ({ ...resource(), scopeSpans: level(() => ({ ...scope(), spans: level(span) })) })),
    },
    logs: {
      resourceLogs: level(() => ({
        ...resource(),
        scopeLogs: level(() => ({ ...scope(), logRecords: level(record) })),
      })),
    },
  };
}

/** The export's protobuf with each level's fields in reverse order, a resource sent twice, and unknown fields. */
function shuffledTraces(traces: { resourceSpans: Record<string, unknown>[] }): Buffer {
  const { ResourceSpans, ScopeSpans } = proto.trace.v1;
  const unknown = Buffer.from([0x98, 0x06, 0x07, 0xa1, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]); // 99: varint, 100: fixed64
  return Buffer.concat(
    traces.resourceSpans.map((rs) => {
      const scopes = ((rs.scopeSpans as Record<string, unknown>[]) ?? []).map((ss) => {
        const spans = encode(ScopeSpans, withBytes({ spans: ss.spans }) as object);
        const scope = encode(ScopeSpans, { scope: ss.scope ?? {} });
        return field(2, Buffer.concat([spans, unknown, ss.scope ? scope : Buffer.alloc(0)]));
      });
      const decoy = encode(ResourceSpans, {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'decoy' } }] },
      });
      const resource = rs.resource
        ? Buffer.concat([decoy, encode(ResourceSpans, { resource: rs.resource })])
        : Buffer.alloc(0);
      return field(1, Buffer.concat([...scopes, unknown, resource]));
    }),
  );
}

const events = (signal: 'traces' | 'logs', body: Buffer, encoding: 'protobuf' | 'json') =>
  otlpEvents(signal, body, encoding, 64 * 1024 * 1024);

describe('OTLP bodies as events', () => {
  it('makes the same events from protobuf, however its levels are laid out, as from JSON (seeded)', () => {
    const { rnd, replay } = testSeed('FERRY_OTLP_SEED', 'npx vitest run test/unit/ingest/otlp.test.ts');
    for (let i = 0; i < 200; i++) {
      const x = randomExport(rnd);
      const fromJson = events('traces', Buffer.from(JSON.stringify(x.traces)), 'json');
      const { ExportTraceServiceRequest } = proto.collector.trace.v1;
      const { ExportLogsServiceRequest } = proto.collector.logs.v1;
      expect(
        events('traces', encode(ExportTraceServiceRequest, withBytes(x.traces) as object), 'protobuf'),
        replay,
      ).toEqual(fromJson);
      expect(events('traces', shuffledTraces(x.traces), 'protobuf'), replay).toEqual(fromJson);
      const spans = x.traces.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      expect(
        fromJson.map((e) => (JSON.parse(e) as { span_id: string }).span_id),
        replay,
      ).toEqual(spans.map((s) => s.spanId));
      expect(events('logs', encode(ExportLogsServiceRequest, withBytes(x.logs) as object), 'protobuf'), replay).toEqual(
        events('logs', Buffer.from(JSON.stringify(x.logs)), 'json'),
      );
    }
  });

  it('refuses malformed protobuf with a 400 naming why', () => {
    const { ExportTraceServiceRequest } = proto.collector.trace.v1;
    const good = encode(ExportTraceServiceRequest, { resourceSpans: [{ scopeSpans: [{ spans: [{ name: 'a' }] }] }] });
    const refusal = (body: Buffer) => {
      let e: unknown;
      try {
        events('traces', body, 'protobuf');
      } catch (x) {
        e = x;
      }
      expect(e).toBeInstanceOf(IngestBodyError);
      expect((e as IngestBodyError).kind).toBe('invalid');
      return (e as Error).message;
    };
    expect(refusal(good.subarray(0, good.length - 1))).toMatch(/^invalid OTLP traces protobuf body: .*past its end/);
    expect(refusal(Buffer.from([0x08, 0x01]))).toMatch(/field 1 of the export is not length-delimited/);
    expect(refusal(Buffer.from([0x0a, 0x02, 0x10, 0x01]))).toMatch(/field 2 of an entry of resourceSpans is not/);
    expect(refusal(Buffer.from([0x02, 0x00]))).toMatch(/numbered 0/);
    expect(refusal(Buffer.from([0x0a, 0x03, 0x12, 0x01, 0x12]))).toMatch(/index out of range/);
    // A span whose attribute says it is longer than the span: decoding it reads into the next span.
    const overlapping = field(
      1,
      field(2, Buffer.from([0x12, 0x04, 0x4a, 0x05, 0x0a, 0x00, 0x12, 0x03, 0x0a, 0x01, 0x61])),
    );
    expect(refusal(overlapping)).toMatch(/a message runs past its end/);
  });

  it('refuses a body whose events pass what one request may make, counting what each costs', () => {
    const body = emptySpans(100_000);
    const made = otlpEvents('traces', body, 'protobuf', 64 * 1024 * 1024);
    expect(made).toHaveLength(100_000);
    const bytes = eventsCost(made);
    expect(otlpEvents('traces', body, 'protobuf', bytes)).toHaveLength(100_000);
    expect(() => otlpEvents('traces', body, 'protobuf', bytes - 1)).toThrow(/events of this body would take more than/);
  });
});

describe('the OTLP decoder (a worker thread)', () => {
  const spans = emptySpans;
  /** One span of `n` empty span events: a few bytes each on the wire, hundreds once decoded and made text. */
  const eventful = (n: number) => field(1, field(2, field(2, emptyFields(11, n))));

  it('decodes off the event loop, one body after another, and stops when idle', async () => {
    const decoder = new OtlpDecoder({ heapMb: 256, timeLimitMs: 30_000, idleMs: 200, maxWaitMs: 30_000 });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      const [a, b] = await Promise.all([
        decoder.decode('traces', spans(200_000), 'protobuf', 1 << 30),
        decoder.decode('traces', spans(3), 'protobuf', 1 << 30),
      ]);
      expect([a.length, b.length]).toEqual([200_000, 3]);
      expect(a[0]).toBe(otlpEvents('traces', spans(1), 'protobuf', 1 << 30)[0]);
    } finally {
      clearInterval(timer);
    }
    // The worker decoded 200,000 spans (hundreds of milliseconds) while the timer kept ticking.
    expect(ticks).toBeGreaterThan(10);
    expect(decoder.running).toBe(true);
    await new Promise((r) => setTimeout(r, 400));
    expect(decoder.running).toBe(false);
    await expect(decoder.decode('traces', Buffer.from([0x08, 0x01]), 'protobuf', 1 << 20)).rejects.toMatchObject({
      kind: 'invalid',
      message: expect.stringMatching(/not length-delimited/),
    });
  });

  it('refuses as busy a body kept waiting too long behind another, and goes on with the next', async () => {
    const decoder = new OtlpDecoder({ heapMb: 256, timeLimitMs: 30_000, idleMs: 1000, maxWaitMs: 100 });
    const [slow, waited] = await Promise.allSettled([
      decoder.decode('traces', spans(300_000), 'protobuf', 1 << 30),
      decoder.decode('traces', spans(1), 'protobuf', 1 << 20),
    ]);
    expect(slow).toMatchObject({ status: 'fulfilled', value: { length: 300_000 } });
    expect(waited).toMatchObject({ status: 'rejected', reason: { kind: 'busy' } });
    expect(await decoder.decode('traces', spans(1), 'protobuf', 1 << 20)).toHaveLength(1);
  });

  it('refuses with 413 a body that needs more memory or time than its limits, and goes on with the next', async () => {
    const small = new OtlpDecoder({ heapMb: 32, timeLimitMs: 30_000, idleMs: 1000, maxWaitMs: 30_000 });
    await expect(small.decode('traces', eventful(600_000), 'protobuf', 1 << 30)).rejects.toMatchObject({
      kind: 'too_large',
      message: expect.stringMatching(/more than the 32 MiB its decoder may hold/),
    });
    expect(await small.decode('traces', spans(2), 'protobuf', 1 << 20)).toHaveLength(2);
    const quick = new OtlpDecoder({ heapMb: 256, timeLimitMs: 50, idleMs: 1000, maxWaitMs: 30_000 });
    const [late, next] = await Promise.allSettled([
      quick.decode('traces', spans(1_000_000), 'protobuf', 1 << 30),
      quick.decode('traces', spans(1), 'protobuf', 1 << 20),
    ]);
    expect(late).toMatchObject({
      status: 'rejected',
      reason: { kind: 'too_large', message: expect.stringMatching(/took more than 0.05s/) },
    });
    expect(next).toMatchObject({ status: 'fulfilled', value: [expect.any(String)] });
  });
});
