/**
 * OTLP bodies as events, item by item: random exports give the same events from protobuf (with its levels
 * in any order on the wire, repeated and unknown fields) as from JSON; malformed protobuf is a 400 naming
 * why; what the conversion holds is charged to the request's budget and given back; a long conversion lets
 * the event loop in.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { IngestBodyError } from '../../../src/ingest/errors.js';
import { otlpEvents, type MemoryMeter } from '../../../src/ingest/otlp.js';
import { testSeed } from '../../support/helpers.js';

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

/** A varint-keyed length-delimited field. */
function field(n: number, inner: Buffer): Buffer {
  const head: number[] = [(n << 3) | 2];
  for (let v = inner.length; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      head.push(v);
      break;
    }
    head.push((v & 127) | 128);
  }
  return Buffer.concat([Buffer.from(head), inner]);
}

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

const events = (signal: 'traces' | 'logs', body: Buffer, encoding: 'protobuf' | 'json', meter?: MemoryMeter) =>
  otlpEvents(signal, body, encoding, 64 * 1024 * 1024, meter);

describe('OTLP bodies as events', () => {
  it('makes the same events from protobuf, however its levels are laid out, as from JSON (seeded)', async () => {
    const { rnd, replay } = testSeed('FERRY_OTLP_SEED', 'npx vitest run test/unit/ingest/otlp.test.ts');
    for (let i = 0; i < 200; i++) {
      const x = randomExport(rnd);
      const fromJson = await events('traces', Buffer.from(JSON.stringify(x.traces)), 'json');
      const { ExportTraceServiceRequest } = proto.collector.trace.v1;
      const { ExportLogsServiceRequest } = proto.collector.logs.v1;
      expect(
        await events('traces', encode(ExportTraceServiceRequest, withBytes(x.traces) as object), 'protobuf'),
        replay,
      ).toEqual(fromJson);
      expect(await events('traces', shuffledTraces(x.traces), 'protobuf'), replay).toEqual(fromJson);
      const spans = x.traces.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      expect(
        fromJson.map((e) => (JSON.parse(e) as { span_id: string }).span_id),
        replay,
      ).toEqual(spans.map((s) => s.spanId));
      expect(
        await events('logs', encode(ExportLogsServiceRequest, withBytes(x.logs) as object), 'protobuf'),
        replay,
      ).toEqual(await events('logs', Buffer.from(JSON.stringify(x.logs)), 'json'));
    }
  });

  it('refuses malformed protobuf with a 400 naming why', async () => {
    const { ExportTraceServiceRequest } = proto.collector.trace.v1;
    const good = encode(ExportTraceServiceRequest, { resourceSpans: [{ scopeSpans: [{ spans: [{ name: 'a' }] }] }] });
    const refusal = async (body: Buffer) => {
      const e = await events('traces', body, 'protobuf').catch((x: unknown) => x);
      expect(e).toBeInstanceOf(IngestBodyError);
      expect((e as IngestBodyError).kind).toBe('invalid');
      return (e as Error).message;
    };
    expect(await refusal(good.subarray(0, good.length - 1))).toMatch(
      /^invalid OTLP traces protobuf body: .*past its end/,
    );
    expect(await refusal(Buffer.from([0x08, 0x01]))).toMatch(/field 1 of the export is not length-delimited/);
    expect(await refusal(Buffer.from([0x0a, 0x02, 0x10, 0x01]))).toMatch(/field 2 of an entry of resourceSpans is not/);
    expect(await refusal(Buffer.from([0x02, 0x00]))).toMatch(/numbered 0/);
    expect(await refusal(Buffer.from([0x0a, 0x03, 0x12, 0x01, 0x12]))).toMatch(/index out of range/);
  });

  it('charges what it holds to the budget, within its limit, and gives the decoding back', async () => {
    const meter = (limit: number) => {
      const m = {
        held: 0,
        peak: 0,
        charge(n: number) {
          if (m.held + n > limit) throw new IngestBodyError('too_large', `over ${limit}`);
          m.held += n;
          m.peak = Math.max(m.peak, m.held);
        },
        give(n: number) {
          m.held -= n;
        },
      };
      return m;
    };
    const spans = Buffer.alloc(200_000).fill(Buffer.from([0x12, 0x00])); // 100,000 empty spans
    const body = field(1, field(2, spans));
    const ok = meter(1 << 30);
    const made = await events('traces', body, 'protobuf', ok);
    expect(made).toHaveLength(100_000);
    // What stays held is the events' text; each decoded span was given back.
    expect(ok.held).toBe(made.reduce((n, e) => n + e.length * 2, 0));

    const json = Buffer.from(`{"resourceSpans":[{"scopeSpans":[{"spans":[${Array(100_000).fill('{}').join(',')}]}]}]}`);
    const parsed = meter(1 << 30);
    expect(await events('traces', json, 'json', parsed)).toEqual(made);
    expect(parsed.held).toBe(ok.held);
    expect(parsed.peak).toBeGreaterThan(100_000 * 64);

    const small = meter(4 << 20);
    await expect(events('traces', json, 'json', small)).rejects.toThrow(/over/);
    expect(small.held).toBe(0);
    const oneBigSpan = field(1, field(2, field(2, Buffer.alloc(200_000).fill(Buffer.from([0x5a, 0x00])))));
    await expect(events('traces', oneBigSpan, 'protobuf', small)).rejects.toThrow(/over/);
    expect(small.peak).toBeLessThanOrEqual(4 << 20);
  });

  it('lets the event loop in during a long conversion', async () => {
    const body = field(1, field(2, Buffer.alloc(400_000).fill(Buffer.from([0x12, 0x00]))));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      const made = await events('traces', body, 'protobuf');
      expect(made).toHaveLength(200_000);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
  });
});
