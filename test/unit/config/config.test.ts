import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig, ConfigError, loadConfigFile } from '../../../src/cli/config.js';
import { goLayoutToStrptime } from '../../../src/sql/time.js';
import { parseBytes, parseDuration } from '../../../src/util/units.js';
import { tempDir } from '../../support/helpers.js';

describe('config', () => {
  it('applies defaults: loopback listener, ./data, 512 MB memory', () => {
    const c = buildConfig({}, {});
    expect(c.service.listen).toEqual({ host: '127.0.0.1', port: 8077 });
    expect(c.service.dataDir).toBe('./data');
    expect(c.service.memoryLimitBytes).toBe(512 * 1024 * 1024);
  });

  it('names the key path of a bad or unknown key', () => {
    expect(() => buildConfig({ service: { listen: 'nope' } }, {})).toThrow(/service\.listen/);
    expect(() => buildConfig({ service: { retention: { default_days: -1 } } }, {})).toThrow(
      /service\.retention\.default_days/,
    );
    expect(() => buildConfig({ service: { colour: 'red' } }, {})).toThrow(/service\.colour: unknown key/);
    expect(() => buildConfig({ service: { memory_limit: 'lots' } }, {})).toThrow(
      /service\.memory_limit: invalid size "lots"/,
    );
    let thrown: unknown;
    try {
      buildConfig({ service: { threads: 0 } }, {});
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).path).toBe('service.threads');
  });

  it("refuses host metrics into a sink's own dataset (one of events), naming the source's key", () => {
    const doc = (dataset: string) => ({
      service: { enabled: false },
      sources: { host: { type: 'host_metrics', dataset, collectors: ['memory', 'load'] } },
      sinks: { out: { type: 'axiom', inputs: ['host'], dataset: 'logs', url: 'https://api.axiom.co', token: 't' } },
    });
    expect(() => buildConfig(doc('logs'), {})).toThrow(
      `sources.host.dataset: "logs" is sink out's own dataset, which holds events: give the metrics a dataset of their own`,
    );
    expect(buildConfig(doc('host-metrics'), {}).agent.sources[0]!.settings).toMatchObject({
      dataset: 'host-metrics',
      collectors: ['memory', 'load'],
      intervalMs: 10_000,
    });
    expect(() =>
      buildConfig({ ...doc('m'), sources: { host: { type: 'host_metrics', collectors: ['gpu'] } } }, {}),
    ).toThrow(/sources\.host\.collectors: "gpu" is not a collector \(cpu, memory, load, disk, filesystem, network\)/);
  });

  it('refuses a sink token with whitespace or control characters and a URL the client cannot use, naming the key', () => {
    const doc = (token: string, url = 'https://api.axiom.co') => ({
      service: { enabled: false },
      sources: { s: { type: 'stdin' } },
      sinks: { out: { type: 'axiom', inputs: ['s'], dataset: 'd', url, token } },
    });
    expect(() => buildConfig(doc('xaat-1234\r'), {})).toThrow(
      /sinks\.out\.token: contains \\r at character 10; a token is printable ASCII without spaces/,
    );
    expect(() => buildConfig(doc('xaat-1234\n'), {})).toThrow(/sinks\.out\.token: contains \\n at character 10/);
    expect(() => buildConfig(doc('xaat 1234'), {})).toThrow(/sinks\.out\.token: contains a space at character 5/);
    expect(() => buildConfig(doc('${T}'), { T: 'xaat-\u00e9' })).toThrow(/sinks\.out\.token: contains U\+00E9/);
    expect(() => buildConfig(doc('xaat-ok', 'http://exa mple.com'), {})).toThrow(
      /sinks\.out\.url: "http:\/\/exa mple.com" is not a valid URL/,
    );
    for (const bare of ['api.axiom.co', 'localhost:8077'])
      expect(() => buildConfig(doc('xaat-ok', bare), {})).toThrow(
        `sinks.out.url: "${bare}" has no scheme: write http://${bare} or https://${bare}`,
      );
    expect(() => buildConfig(doc('xaat-ok', 'https://api.axiom.co/v1/ingest/logs'), {})).toThrow(
      'sinks.out.url: "https://api.axiom.co/v1/ingest/logs" is the API root (e.g. https://api.axiom.co), without /v1/ingest/logs: the dataset is set apart',
    );
    expect(() => buildConfig(doc('xaat-ok', 'https://api.axiom.co/?x=1'), {})).toThrow(
      /sinks\.out\.url: .* no query or fragment/,
    );
    expect(buildConfig(doc('xaat-0b5e-ok'), {}).agent.sinks[0]!.settings).toMatchObject({ token: 'xaat-0b5e-ok' });
  });

  it("takes a syslog parser's time zone, and names an unknown one", () => {
    const doc = (extra: object) => ({
      service: { enabled: false },
      sources: { s: { type: 'stdin' } },
      transforms: { t: { type: 'parse', inputs: ['s'], parser: 'syslog', ...extra } },
      sinks: { out: { type: 'axiom', inputs: ['t'], dataset: 'd', url: 'http://x', token: 't' } },
    });
    expect(buildConfig(doc({ timezone: 'Europe/Paris' }), {}).agent.transforms[0]).toMatchObject({
      settings: { parser: { type: 'syslog' }, settings: { timezone: 'Europe/Paris' } },
    });
    expect(() => buildConfig(doc({ timezone: 'Mars/Olympus' }), {})).toThrow(
      /transforms\.t\.timezone: unknown time zone "Mars\/Olympus"/,
    );
  });

  it('bounds max_fields_per_dataset by what memory_limit can write, naming both keys', () => {
    expect(buildConfig({}, {}).service.maxFieldsPerDataset).toBe(512);
    expect(buildConfig({ service: { memory_limit: '2GiB' } }, {}).service.maxFieldsPerDataset).toBe(2048);
    expect(buildConfig({ service: { max_fields_per_dataset: 500 } }, {}).service.maxFieldsPerDataset).toBe(500);
    expect(() => buildConfig({ service: { max_fields_per_dataset: 2048 } }, {})).toThrow(
      /service\.max_fields_per_dataset: 2048 fields cannot be written with service\.memory_limit 512MiB \(at most 512: 1 MiB per field\)/,
    );
  });

  it("reads service.query_limits, bounding the expression depth by the parser's own cap", () => {
    expect(buildConfig({}, {}).service.queryLimits).toEqual({
      maxQueryBytes: 262144,
      maxStages: 200,
      maxColumns: 2100,
      maxExpressionDepth: 256,
      maxExpressionTerms: 5000,
      maxResultBytes: 32 << 20,
      maxNestedSummaries: 12,
      maxMadeTextBytes: 128 << 20,
    });
    expect(
      buildConfig(
        {
          service: { query_limits: { max_expression_depth: 32, max_query_bytes: '1MiB', max_made_text_bytes: '1GiB' } },
        },
        {},
      ).service.queryLimits,
    ).toMatchObject({ maxExpressionDepth: 32, maxQueryBytes: 1 << 20, maxMadeTextBytes: 1 << 30 });
    expect(buildConfig({}, {}).service.jsBudget).toEqual({ valueChars: 4 << 20, chunkChars: 64 << 20, chunkMs: 250 });
    expect(
      buildConfig(
        {
          service: { query_limits: { max_js_value_bytes: '1MiB', max_js_chunk_bytes: 1000, max_js_chunk_time: '1s' } },
        },
        {},
      ).service.jsBudget,
    ).toEqual({ valueChars: 1 << 20, chunkChars: 1000, chunkMs: 1000 });
    expect(() => buildConfig({ service: { query_limits: { max_js_chunk_time: 'soon' } } }, {})).toThrow(
      /service\.query_limits\.max_js_chunk_time/,
    );
    expect(() => buildConfig({ service: { query_limits: { max_expression_depth: 257 } } }, {})).toThrow(
      /service\.query_limits\.max_expression_depth: must be <= 256/,
    );
    expect(() => buildConfig({ service: { query_limits: { max_stages: 0 } } }, {})).toThrow(
      /service\.query_limits\.max_stages: must be >= 1/,
    );
  });

  it('interpolates ${VAR} and ${VAR:-default} in values, and names a missing variable', () => {
    const c = buildConfig(
      { service: { listen: '${HOST:-127.0.0.1}:${PORT}', data_dir: '${DIR:-/var/lib/ferry}' } },
      { PORT: '9000' },
    );
    expect(c.service.listen).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(c.service.dataDir).toBe('/var/lib/ferry');
    expect(() => buildConfig({ service: { data_dir: '${NOPE}' } }, {})).toThrow(
      /service\.data_dir: environment variable NOPE is not set/,
    );
  });

  it('reads true and false from an environment variable as booleans, and names another word', () => {
    const doc = { service: { enabled: '${FERRY_SERVICE:-true}' } };
    expect(buildConfig(doc, {}).service.enabled).toBe(true);
    expect(buildConfig(doc, { FERRY_SERVICE: 'false' }).service.enabled).toBe(false);
    expect(() => buildConfig(doc, { FERRY_SERVICE: 'no' })).toThrow(
      /service\.enabled: must be true or false, not "no"/,
    );
  });

  it('loads the shipped default config and reports YAML errors with the file name', () => {
    const c = loadConfigFile(new URL('../../../config/ferry.yaml', import.meta.url).pathname, {});
    expect(c.service.listen.host).toBe('127.0.0.1');
    const bad = join(tempDir(), 'bad.yaml');
    writeFileSync(bad, 'service: [unclosed');
    expect(() => loadConfigFile(bad, {})).toThrow(/bad\.yaml: YAML syntax error/);
  });
});

describe('units', () => {
  it('reads service.query_timeout as a Go duration and names it when it is not one', () => {
    expect(buildConfig({ service: { query_timeout: '1m30s' } }, {}).service.queryTimeoutMs).toBe(90_000);
    expect(buildConfig({}, {}).service.queryTimeoutMs).toBe(60_000);
    expect(() => buildConfig({ service: { query_timeout: 'soon' } }, {})).toThrow(
      /^invalid config:\n  service.query_timeout: invalid duration "soon"/,
    );
  });

  it('parses sizes and Go durations', () => {
    expect(parseBytes('512MB')).toBe(512e6);
    expect(parseBytes('1GiB')).toBe(1024 ** 3);
    expect(parseBytes(42)).toBe(42);
    expect(parseDuration('1h30m')).toBe(5_400_000_000_000n);
    expect(parseDuration('1.5s')).toBe(1_500_000_000n);
    expect(parseDuration('300ms')).toBe(300_000_000n);
    expect(parseDuration('7d')).toBe(604_800_000_000_000n);
    expect(() => parseDuration('soon')).toThrow(/invalid duration/);
  });

  it('translates Go time layouts to strptime formats', () => {
    expect(goLayoutToStrptime('2/Jan/2006:15:04:05 -0700')).toBe('%-d/%b/%Y:%H:%M:%S %z');
    expect(goLayoutToStrptime('2006-01-02T15:04:05.000Z07:00')).toBe('%Y-%m-%dT%H:%M:%S.%g%z');
    expect(goLayoutToStrptime('Mon Jan _2 15:04:05 MST 2006')).toBe('%a %b %-d %H:%M:%S %Z %Y');
    expect(() => goLayoutToStrptime('hello')).toThrow(/not a Go time layout/);
  });
});
