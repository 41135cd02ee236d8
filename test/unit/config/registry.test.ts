import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parsers } from '../../../src/agent/parsers/index.js';
import { Topology } from '../../../src/agent/pipeline/topology.js';
import { sinks } from '../../../src/agent/sinks/index.js';
import { sources } from '../../../src/agent/sources/index.js';
import { transforms } from '../../../src/agent/transforms/index.js';
import { componentsMarkdown, componentsText } from '../../../src/cli/components.js';
import { buildConfig } from '../../../src/cli/config.js';
import { documentValidator } from '../../../src/config/document.js';
import { int, Options, str } from '../../../src/config/options.js';
import { configureComponent, Registry, type ComponentSpec } from '../../../src/config/registry.js';

const base = { service: { enabled: false } };
const axiom = (inputs: string[]) => ({ type: 'axiom', inputs, dataset: 'd', url: 'http://127.0.0.1:9', token: 't' });

describe('component registries', () => {
  it("the README's table of component keys is the one the registries print", () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const table = /<!-- components:start -->\n([\s\S]*?)<!-- components:end -->/.exec(readme)?.[1];
    expect(table, 'run: node dist/src/cli/main.js components --markdown, and paste it between the markers').toBe(
      componentsMarkdown(),
    );
    for (const t of [...sources.types, ...transforms.types, ...sinks.types, ...parsers.types])
      expect(componentsText()).toContain(`  ${t.padEnd(10)} `);
  });

  it('a component registered is in the schema, with its own required keys, and its keys only on its type', () => {
    const ECHO = { word: str().required().doc('the word'), times: int(1, { min: 1 }).doc('how often') };
    const echo: ComponentSpec<{ word: string; times: number }, typeof ECHO> = {
      type: 'echo',
      summary: 'says a word',
      options: ECHO,
      configure: (v) => ({ word: v.word, times: v.times }),
    };
    const quiet: ComponentSpec = { type: 'quiet', summary: 'says nothing', options: {}, configure: () => undefined };
    const r = new Registry('thing', [echo as ComponentSpec, quiet]);
    const validate = documentValidator(r.schema('type', {}));
    expect(validate({ type: 'echo', word: 'hi' })).toEqual({ type: 'echo', word: 'hi' });
    expect(configureComponent(echo, new Options({ type: 'echo', word: 'hi' }, 'things.e'))).toEqual({
      word: 'hi',
      times: 1,
    });
    expect(() => validate({ type: 'echo' })).toThrow(/must have required property 'word'/);
    expect(() => validate({ type: 'loud' })).toThrow(/type: must be one of echo, quiet/);
    expect(() => validate({ type: 'echo', word: 'hi', tims: 2 })).toThrow(/tims: unknown key; did you mean times\?/);
    expect(() => r.checkKeys(new Options({ type: 'quiet', word: 'x' }, 'things.q'), 'quiet', ['type'])).toThrow(
      'things.q.word: not a key of a quiet thing (only of echo)',
    );
    expect(() => r.checkKeys(new Options({ type: 'echo', wrd: 'x' }, 'things.e'), 'echo', ['type'])).toThrow(
      'things.e.wrd: not a key of a echo thing; did you mean word?',
    );
    expect(() => new Registry('thing', [echo, echo])).toThrow(/two things named echo/);
  });

  it('names the key path of every setting a component refuses', () => {
    const cases: [object, string][] = [
      [
        { sources: { a: { type: 'stdin', include: ['x'] } }, sinks: { o: axiom(['a']) } },
        'sources.a.include: not a key of a stdin source (only of file)',
      ],
      [
        {
          sources: { a: { type: 'stdin' } },
          transforms: { t: { type: 'parse', inputs: ['a'], parser: 'json', pattern: '(?<x>.)' } },
          sinks: { o: axiom(['t']) },
        },
        'transforms.t.pattern: only the regex parser takes pattern',
      ],
      [
        {
          sources: { a: { type: 'stdin' } },
          transforms: { t: { type: 'parse', inputs: ['a'], parser: 'regex' } },
          sinks: { o: axiom(['t']) },
        },
        'transforms.t: the regex parser needs pattern',
      ],
      [
        {
          sources: { a: { type: 'stdin' } },
          transforms: { t: { type: 'parse', inputs: ['a'], parser: 'regex', pattern: '\\d+' } },
          sinks: { o: axiom(['t']) },
        },
        'transforms.t.pattern: a regex parser pattern needs named groups',
      ],
      [
        {
          sources: { a: { type: 'stdin' } },
          transforms: { t: { type: 'multiline', inputs: ['a'], preset: 'java', start: 'x' } },
          sinks: { o: axiom(['t']) },
        },
        'transforms.t: a multiline transform takes exactly one of preset, start and continuation (got preset, start)',
      ],
      [
        { sources: { a: { type: 'stdin' }, b: { type: 'stdin' } }, sinks: { o: axiom(['a', 'b']) } },
        'sources: at most one stdin source',
      ],
      [
        { sources: { a: { type: 'stdin' } }, sinks: { o: { type: 'local', inputs: ['a'], dataset: 'd' } } },
        'sinks.o.type: a local sink writes into the embedded service: it needs service.enabled: true',
      ],
      [
        { sources: { a: { type: 'stdin' } }, sinks: { o: { ...axiom(['a']), retry: { max_backoff: 'later' } } } },
        'sinks.o.retry.max_backoff: invalid duration "later"',
      ],
      [
        {
          sources: { a: { type: 'stdin' } },
          transforms: { x: { type: 'enrich', inputs: ['a', 'y'] }, y: { type: 'enrich', inputs: ['x'] } },
          sinks: { o: axiom(['y']) },
        },
        'transforms.x.inputs: a cycle: x → y → x',
      ],
      [
        { sources: { a: { type: 'stdin' } }, sinks: { o: axiom(['o']) } },
        'sinks.o.inputs.0: "o" is a sink; inputs name sources or transforms',
      ],
      [
        { sources: { a: { type: 'stdin' }, b: { type: 'file', include: ['/x'] } }, sinks: { o: axiom(['a']) } },
        'sources.b: nothing reads from this source',
      ],
      [
        {
          sources: { a: { type: 'stdin' } },
          transforms: { a: { type: 'enrich', inputs: ['a'] } },
          sinks: { o: axiom(['a']) },
        },
        'transforms.a: the name is already used by sources.a',
      ],
    ];
    for (const [doc, message] of cases) expect(() => buildConfig({ ...base, ...doc }, {}), message).toThrow(message);
  });

  it("reads each component's settings with its defaults", () => {
    const cfg = buildConfig(
      {
        ...base,
        sources: { f: { type: 'file', include: ['/var/log/*.log'], poll_interval: '1s' } },
        transforms: {
          m: { type: 'multiline', inputs: ['f'], preset: 'java' },
          p: { type: 'parse', inputs: ['m'], parser: 'syslog' },
        },
        sinks: { o: axiom(['p']) },
      },
      {},
    ).agent;
    expect(cfg.sources[0]!.settings).toEqual({
      include: ['/var/log/*.log'],
      exclude: [],
      startAt: 'beginning',
      maxLineBytes: 1024 * 1024,
      fingerprintBytes: 256,
      pollIntervalMs: 1000,
      rotateWaitMs: 5000,
      checkpointIntervalMs: 1000,
      optional: false,
    });
    expect(cfg.transforms[0]!.settings).toMatchObject({
      preset: 'java',
      timeoutMs: 1000,
      maxLines: 500,
      maxBytes: 1024 * 1024,
    });
    expect(cfg.transforms[1]!.settings).toMatchObject({
      parser: { type: 'syslog' },
      settings: { rfc: 'auto', timezone: 'local' },
    });
    expect(cfg.sinks[0]).toMatchObject({
      concurrency: 3,
      batch: { maxEvents: 10_000, maxBytes: 5 * 1024 * 1024, timeoutMs: 1000 },
      queue: { whenFull: 'block' },
      retry: { initialMs: 250, maxMs: 30_000, maxAttempts: 0 },
    });
    expect(cfg.sinks[0]!.settings).toEqual({
      url: 'http://127.0.0.1:9',
      token: 't',
      compression: 'zstd',
      timeoutMs: 60_000,
    });
  });
});

describe('topology', () => {
  const t = (name: string, inputs: string[]) => ({ name, inputs });

  it('orders transforms with the flow, whatever order the config lists them in, and counts each path of a source to a sink as a copy', () => {
    // a → enrich → (parse, both) → sinks; b → sink2 only; every path is a copy, diamonds included.
    const g = Topology.of(
      [{ name: 'a' }, { name: 'b' }],
      [t('parse', ['enrich']), t('both', ['enrich', 'parse']), t('enrich', ['a'])],
      [t('sink1', ['parse', 'both']), t('sink2', ['b', 'both'])],
    );
    expect(g.transformOrder).toEqual(['enrich', 'parse', 'both']);
    expect(g.readersOf('enrich')).toEqual(['parse', 'both']);
    expect(g.readersOf('both')).toEqual(['sink1', 'sink2']);
    // a: enrich→parse→sink1, enrich→parse→both→sink1, enrich→parse→both→sink2, enrich→both→sink1, enrich→both→sink2.
    expect(g.copiesOf('a')).toBe(5);
    expect(g.copiesOf('b')).toBe(1);
    // Following the routes as the pipeline does, each of a's copies arrives at its sink with a route of its own.
    const arrivals: string[] = [];
    const follow = (name: string, route: number) => {
      if (name.startsWith('sink')) return void arrivals.push(`${name}:${route}`);
      const readers = g.readersOf(name);
      if (readers.length === 1) return follow(readers[0]!, route);
      const routes = g.forkRoutes(name, route);
      readers.forEach((r, i) => follow(r, routes[i]!));
    };
    follow('a', 0);
    expect(arrivals).toHaveLength(5);
    expect(new Set(arrivals.map((a) => a.split(':')[1])).size).toBe(5);
    expect(g.isReadByTransform('a')).toBe(true);
    expect(g.isReadByTransform('b')).toBe(false);
  });

  it("reads a transform's named outputs as paths of their own, and refuses reading the transform itself", () => {
    const split = { name: 'split', inputs: ['s'], outputs: ['errors', 'slow', '_unmatched'] };
    const g = Topology.of(
      [{ name: 's' }],
      [t('tag', ['split.slow']), split],
      [t('o1', ['split.errors', 'tag']), t('o2', ['split.errors', 'split._unmatched'])],
    );
    // The route comes before what reads its outputs, whatever the config's order.
    expect(g.transformOrder).toEqual(['split', 'tag']);
    expect(g.readersOf('split')).toEqual(['split.errors', 'split.slow', 'split._unmatched']);
    expect(g.readersOf('split.errors')).toEqual(['o1', 'o2']);
    // errors→o1, errors→o2, slow→tag→o1, _unmatched→o2: every output's path is a copy to acknowledge.
    expect(g.copiesOf('s')).toBe(4);
    expect(g.sinksOf('s')).toEqual(['o1', 'o2']);
    expect(g.forkRoutes('split', 0)).toHaveLength(3);
    expect(() => Topology.of([{ name: 's' }], [split], [t('o', ['split'])])).toThrow(
      'sinks.o.inputs.0: transforms.split has named outputs: read one of them (split.errors, split.slow, split._unmatched)',
    );
    expect(() => Topology.of([{ name: 's' }], [split], [t('o', ['split.nope'])])).toThrow(
      'sinks.o.inputs.0: transforms.split has no output "nope" (its outputs: errors, slow, _unmatched)',
    );
    expect(() =>
      Topology.of([{ name: 's' }], [split], [t('split.slow', ['split.errors']), t('o', ['split._unmatched'])]),
    ).toThrow('sinks.split.slow: the name is also the output "slow" of transforms.split');
    // An output read by a transform that feeds the route again closes a cycle.
    expect(() =>
      Topology.of(
        [{ name: 's' }],
        [{ ...split, inputs: ['s', 'back'] }, t('back', ['split.slow'])],
        [t('o', ['back'])],
      ),
    ).toThrow('a cycle');
  });

  it('refuses a cycle through several transforms, naming it', () => {
    expect(() =>
      Topology.of([{ name: 's' }], [t('x', ['s', 'z']), t('y', ['x']), t('z', ['y'])], [t('o', ['z'])]),
    ).toThrow('transforms.x.inputs: a cycle: x → z → y → x');
  });
});
