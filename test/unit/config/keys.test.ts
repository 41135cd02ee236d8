/**
 * Every config key is declared once (src/config/options.ts): these tests hold the README's key tables to
 * the declarations, each documented default to the value the code uses when the key is absent, and the
 * errors a user meets to what the declarations know (the allowed words, the closest key).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { AGENT_OPTIONS, COMPONENT_SECTIONS } from '../../../src/agent/config.js';
import { parsers } from '../../../src/agent/parsers/index.js';
import { componentsMarkdown, sectionMarkdown } from '../../../src/cli/components.js';
import { buildConfig, LOG_OPTIONS } from '../../../src/cli/config.js';
import type { Option, OptionSpecs } from '../../../src/config/options.js';
import { SERVICE_OPTIONS } from '../../../src/service/config.js';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const between = (marker: string) =>
  new RegExp(`<!-- ${marker}:start -->\\n([\\s\\S]*?)<!-- ${marker}:end -->`).exec(readme)?.[1];

/** Every declared key, by its documented path. */
function leaves(prefix: string, specs: OptionSpecs): [string, Option<unknown>][] {
  return Object.entries(specs).flatMap(([k, o]) =>
    o.keys ? leaves(`${prefix}${k}.`, o.keys) : [[`${prefix}${k}`, o] as [string, Option<unknown>]],
  );
}

const everyKey: [string, Option<unknown>][] = [
  ...leaves('log.', LOG_OPTIONS),
  ...leaves('agent.', AGENT_OPTIONS),
  ...leaves('service.', SERVICE_OPTIONS),
  ...COMPONENT_SECTIONS.flatMap((s) => [
    ...leaves(`${s.key}.<name>.`, s.common),
    ...s.registry.specs.flatMap((c) =>
      leaves(`${s.key}.<name>.`, c.options).map(([k, o]) => [`${k} (${c.type})`, o] as [string, Option<unknown>]),
    ),
  ]),
  ...parsers.specs.flatMap((p) => leaves(`parser ${p.type}.`, p.options)),
];

describe('config keys, declared once', () => {
  it("the README's tables of the agent's, the service's and the components' keys are the declarations'", () => {
    expect(between('agent-keys'), 'run: ferry components --markdown --section agent').toBe(sectionMarkdown('agent'));
    expect(between('service-keys'), 'run: ferry components --markdown --section service').toBe(
      sectionMarkdown('service'),
    );
    expect(between('components'), 'run: ferry components --markdown').toBe(componentsMarkdown());
  });

  it('every key says what it does, and a key with a default documents it', () => {
    expect(everyKey.length).toBeGreaterThan(70);
    for (const [key, o] of everyKey) {
      expect(o.description, key).not.toBe('');
      if (!o.isRequired && o.read(undefined, key) !== undefined) expect(o.shownDefault, key).toBeDefined();
    }
  });

  it('a default shown as a literal is the value the code uses when the key is absent', () => {
    let literals = 0;
    for (const [key, o] of everyKey) {
      // A literal, not a placeholder such as `<data_dir>/dead-letter/<sink>.ndjson`.
      const m = /^`([^`<]+)`$/.exec(o.shownDefault ?? '');
      if (!m) continue;
      literals++;
      // As a user would write it in the YAML file.
      const written = parseYaml(m[1]!) as unknown;
      expect(o.read(undefined, key), `${key}: documented as ${m[1]}`).toEqual(o.read(written, key));
    }
    expect(literals).toBeGreaterThan(50);
  });

  it('the sizes the README once gave in the wrong unit are the sizes the code uses', () => {
    // 512MB would be 512,000,000 bytes by Ferry's own parser; the code has always used 512 MiB.
    const c = buildConfig({}, {});
    expect(c.service.memoryLimitBytes).toBe(512 * 1024 * 1024);
    expect(c.service.maxBodyBytes).toBe(100 * 1024 * 1024);
    expect(readme).toContain('| `service.memory_limit` | DuckDB memory limit (`512MB`, `1GiB`) | `512MiB` |');
    const sink = buildConfig(
      {
        service: { enabled: false },
        sources: { a: { type: 'stdin' } },
        sinks: { o: { type: 'axiom', inputs: ['a'], dataset: 'd', url: 'http://127.0.0.1:9', token: 't' } },
      },
      {},
    ).agent.sinks[0]!;
    expect(sink.batch.maxBytes).toBe(5 * 1024 * 1024);
    expect(readme).toContain('| `sinks.<name>.batch.max_bytes` | … or at this size (before compression) | `5MiB` |');
  });

  it('a wrong word lists the allowed ones, and an unknown key names the closest known one, at any depth', () => {
    const agent = (source: object, sink: object = {}) => ({
      service: { enabled: false },
      sources: { a: { type: 'file', include: ['/x/*.log'], ...source } },
      sinks: {
        o: { type: 'axiom', inputs: ['a'], dataset: 'd', url: 'http://127.0.0.1:9', token: 't', ...sink },
      },
    });
    const cases: [object, string][] = [
      [
        agent({}, { compression: 'gzipp' }),
        'sinks.o.compression: must be one of gzip, zstd, none (did you mean gzip?)',
      ],
      [agent({ start_at: 'middle' }), 'sources.a.start_at: must be one of beginning, end'],
      [agent({ rotate_wiat: '1s' }), 'sources.a.rotate_wiat: unknown key; did you mean rotate_wait?'],
      [agent({}, { batch: { max_byte: '1MiB' } }), 'sinks.o.batch.max_byte: unknown key; did you mean max_bytes?'],
      [agent({}, { queue: { when_full: 'drop' } }), 'sinks.o.queue.when_full: must be one of block, drop_newest'],
      [{ service: { memory_limt: '1GiB' } }, 'service.memory_limt: unknown key; did you mean memory_limit?'],
      [
        { service: { query_limits: { max_stage: 3 } } },
        'service.query_limits.max_stage: unknown key; did you mean max_stages?',
      ],
      [{ service: { colour: 'red' } }, 'service.colour: unknown key'],
      [
        { log: { level: 'infoo' } },
        'log.level: must be one of trace, debug, info, warn, error, fatal, silent (did you mean info?)',
      ],
      [
        { service: { notifiers: { smtp: { host: 'h', from: 'a@b', starttls: 'yes' } } } },
        'service.notifiers.smtp.starttls: must be one of required, opportunistic, off',
      ],
      [
        { service: { notifiers: { deny_networks: ['10.0.0.0/33'] } } },
        'service.notifiers.deny_networks: "10.0.0.0/33" is not a CIDR',
      ],
      [{ service: { monitors: { runs_dataset: 'a b' } } }, 'service.monitors.runs_dataset: '],
      [{ agent: { api: { listen: 'x:99999' } } }, 'agent.api.listen: port 99999 out of range'],
      [agent({ dataset: 'bad name' }), 'sources.a.dataset: invalid dataset name "bad name"'],
      [
        {
          service: { enabled: false },
          sources: { n: { type: 'syslog', mode: 'udp', tls: { cert_file: 'c', key_file: 'k' } } },
          sinks: { o: { type: 'axiom', inputs: ['n'], dataset: 'd', url: 'http://127.0.0.1:9', token: 't' } },
        },
        'sources.n.tls: TLS is for mode: tcp',
      ],
      [
        {
          service: { enabled: false },
          sources: { n: { type: 'syslog', timezone: 'Mars/Olympus' } },
          sinks: { o: { type: 'axiom', inputs: ['n'], dataset: 'd', url: 'http://127.0.0.1:9', token: 't' } },
        },
        'sources.n.timezone: unknown time zone "Mars/Olympus"',
      ],
      [
        {
          service: { enabled: false },
          sources: { j: { type: 'journald', matches: ['lowercase=x'] } },
          sinks: { o: { type: 'axiom', inputs: ['j'], dataset: 'd', url: 'http://127.0.0.1:9', token: 't' } },
        },
        'sources.j.matches: "lowercase=x" is not FIELD=value',
      ],
    ];
    for (const [doc, message] of cases) expect(() => buildConfig(doc, {}), message).toThrow(message);
    // Far from every key: no guess. A key of another type of sink is not offered; a short word needs to
    // be a single slip away.
    expect(() => buildConfig({ service: { colour: 'red' } }, {})).not.toThrow(/did you mean/);
    const local = { type: 'local', inputs: ['a'], dataset: 'd', tokne: 'x' };
    expect(() => buildConfig({ sources: { a: { type: 'stdin' } }, sinks: { o: local } }, {})).toThrow(
      /sinks\.o\.tokne: unknown key$/m,
    );
    expect(() => buildConfig(agent({}, { ttl: '1s' }), {})).toThrow(/sinks\.o\.ttl: unknown key$/m);
    expect(() => buildConfig(agent({}, { uri: 'http://x' }), {})).toThrow(
      'sinks.o.uri: unknown key; did you mean url?',
    );
  });

  it('reads a YAML number where a word or a duration is meant as the user would expect', () => {
    const parse = (extra: object) => ({
      service: { enabled: false },
      sources: { a: { type: 'stdin' } },
      transforms: { p: { type: 'parse', inputs: ['a'], parser: 'syslog', ...extra } },
      sinks: { o: { type: 'axiom', inputs: ['p'], dataset: 'd', url: 'http://127.0.0.1:9', token: 't' } },
    });
    expect(() => buildConfig(parse({ rfc: 3164 }), {})).toThrow(
      "transforms.p.rfc: must be one of 3164, 5424, auto (quote it: '3164')",
    );
    expect(buildConfig({ service: { query_timeout: 0 } }, {}).service.queryTimeoutMs).toBe(0);
    expect(() => buildConfig({ service: { query_timeout: 30 } }, {})).toThrow(
      'service.query_timeout: a duration needs a unit: "30s" or "30ms"?',
    );
  });

  it('gives every component its own copy of a default object or list', () => {
    const cfg = buildConfig(
      {
        service: { enabled: false },
        sources: { a: { type: 'file', include: ['/x/*.log'] }, b: { type: 'file', include: ['/y/*.log'] } },
        transforms: { e: { type: 'enrich', inputs: ['a'] }, f: { type: 'enrich', inputs: ['b'] } },
        sinks: { o: { type: 'axiom', inputs: ['e', 'f'], dataset: 'd', url: 'http://127.0.0.1:9', token: 't' } },
      },
      {},
    ).agent;
    const [e, f] = cfg.transforms.map((t) => t.settings as { fields: Record<string, unknown> });
    e!.fields.leak = 1;
    expect(f!.fields).toEqual({});
    const [a, b] = cfg.sources.map((x) => x.settings as { exclude: string[] });
    a!.exclude.push('*.gz');
    expect(b!.exclude).toEqual([]);
  });
});
