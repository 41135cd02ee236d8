import { describe, expect, it } from 'vitest';
import { TapHub, type TapListener } from '../../../../src/agent/pipeline/taps.js';
import type { Stream } from '../../../../src/agent/sources/source.js';

const stream: Stream = { id: 'f', source: 'file', acknowledge: () => undefined };

function listener(test?: TapListener['test'], budget = Infinity): TapListener & { seen: string[] } {
  const seen: string[] = [];
  return {
    components: new Set(['file']),
    test,
    ready: () => budget-- > 0,
    offer: (_c, line) => void seen.push(line),
    seen,
  };
}

describe('taps on a source whose lines go on in runs', () => {
  it('shows a run as its lines, one event each, filtered and rated line by line', () => {
    const hub = new TapHub();
    const all = listener();
    const errors = listener((d) => Number(d.status) >= 500);
    const two = listener(undefined, 2);
    for (const l of [all, errors, two]) hub.add(l);
    // The third line only looks like an object: a tap shows it as a message, as it does a lone line.
    const raw = Buffer.from('{"status":200}\n{"status":503}\n{not json}\n{"status":500}');
    hub.offer('file', { text: '', raw, lines: 4, truncated: false, stream, offset: 60, generation: 0 });
    expect(all.seen).toEqual(['{"status":200}', '{"status":503}', '{"message":"{not json}"}', '{"status":500}']);
    expect(errors.seen).toEqual(['{"status":503}', '{"status":500}']);
    expect(two.seen).toEqual(['{"status":200}', '{"status":503}']);
  });
});
