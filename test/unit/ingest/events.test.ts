/**
 * The relay's events, as the receiver will be sent them: each one line of NDJSON, whatever the client's
 * layout, and sized as the relay has always sized them (in characters).
 */
import { describe, expect, it } from 'vitest';
import { MAX_EVENT_BYTES, splitArray, splitNdjson } from '../../../src/ingest/events.js';

const objects = [{ a: 1, s: 'line\nbreak "quoted"' }, { b: [1, { c: null }], é: 'ü' }, {}];

describe('the relay’s events', () => {
  it('are one line each, also from a pretty-printed array or CR between tokens, and parse as sent', () => {
    for (const body of [
      JSON.stringify(objects, null, 2),
      JSON.stringify(objects, null, '\t').replace(/\n/g, '\r\n'),
      `[${objects.map((o) => JSON.stringify(o).replace(/,/g, ',\r')).join(',\n')}]`,
    ]) {
      const split = splitArray(Buffer.from(body));
      expect(split.failed).toBe(0);
      for (const e of split.events) expect([e.includes(0x0a), e.includes(0x0d)]).toEqual([false, false]);
      expect(split.events.map((e) => JSON.parse(e.toString()) as unknown)).toEqual(objects);
    }
    const ndjson = splitNdjson(Buffer.from(`{"a":\r1}\n{"b":2}\r\n`));
    expect(ndjson.events.map((e) => e.toString())).toEqual(['{"a": 1}', '{"b":2}']);
  });

  it('are sized in characters: an event of more bytes than the limit but fewer characters is taken', () => {
    const wide = `{"a":"${'é'.repeat(MAX_EVENT_BYTES / 2 + 1000)}"}`;
    expect(Buffer.byteLength(wide)).toBeGreaterThan(MAX_EVENT_BYTES);
    const taken = splitNdjson(Buffer.from(`${wide}\n{"b":1}`));
    expect([taken.events.length, taken.failed]).toEqual([2, 0]);
    const long = `{"a":"${'x'.repeat(MAX_EVENT_BYTES)}"}`;
    const refused = splitNdjson(Buffer.from(`${long}\n{"b":1}`));
    expect(refused.failures).toEqual([{ event: 1, error: `event 1: larger than ${MAX_EVENT_BYTES} bytes` }]);
    expect(refused.events.map((e) => e.toString())).toEqual(['{"b":1}']);
  });
});
