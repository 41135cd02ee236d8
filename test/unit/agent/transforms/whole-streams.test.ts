/**
 * Streams of whole events used once (the relay's and OTLP's, one per request): the parse and multiline
 * transforms keep no state for them, so a million requests leave nothing behind, and no event waits for a
 * multiline timeout.
 */
import { describe, expect, it } from 'vitest';
import { Options } from '../../../../src/config/options.js';
import { configureComponent } from '../../../../src/config/registry.js';
import { multilineTransform } from '../../../../src/agent/transforms/multiline.js';
import { parseTransform } from '../../../../src/agent/transforms/parse.js';
import type { Envelope } from '../../../../src/agent/transforms/transform.js';

const envelope = (i: number, whole: boolean): Envelope => ({
  text: `{"i":${i}}`,
  truncated: false,
  structured: true,
  stream: { id: `req#${i}`, source: 'apps', whole, acknowledge: () => undefined },
  offset: 1,
  generation: 0,
});

describe('transforms over whole-event streams', () => {
  it('parse keeps no parser per stream for them, and one per stream otherwise', async () => {
    const out: Envelope[] = [];
    const settings = configureComponent(parseTransform, new Options({ type: 'parse', parser: 'json' }, 'transforms.p'));
    const t = parseTransform.create(settings, {
      name: 'p',
      next: async (e) => void out.push(e),
      output: () => {
        throw new Error('no named outputs');
      },
      isRead: () => false,
      counters: (make) => make(),
      log: { warn: () => undefined },
    });
    for (let i = 0; i < 100; i++) await t.process(envelope(i, true));
    expect((t as unknown as { parsers: Map<string, unknown> }).parsers.size).toBe(0);
    expect(out.map((e) => e.event?.get('i'))).toEqual(Array.from({ length: 100 }, (_, i) => i));
    for (let i = 0; i < 3; i++) await t.process(envelope(i, false));
    expect((t as unknown as { parsers: Map<string, unknown> }).parsers.size).toBe(3);
  });

  it('multiline passes them on at once, holding nothing', async () => {
    const out: Envelope[] = [];
    const settings = configureComponent(
      multilineTransform,
      new Options({ type: 'multiline', preset: 'java' }, 'transforms.m'),
    );
    const t = multilineTransform.create(settings, {
      name: 'm',
      next: async (e) => void out.push(e),
      output: () => {
        throw new Error('no named outputs');
      },
      isRead: () => false,
      counters: (make) => make(),
      log: { warn: () => undefined },
    });
    for (let i = 0; i < 50; i++) await t.process(envelope(i, true));
    expect(out).toHaveLength(50);
    expect((t as unknown as { joiners: Map<string, unknown> }).joiners.size).toBe(0);
  });
});
