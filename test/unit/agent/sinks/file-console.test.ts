/**
 * The file sink's names and bytes: path templates filled in (UTC), parts numbered before the extension, a
 * batch queued in another compression written in the sink's own, files readable as one stream; the console
 * sink's readable lines.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decompress as zstdDecompress } from 'zstd-napi';
import { readableLines } from '../../../../src/agent/sinks/console.js';
import { FileSink, fileSink, partPath, renderPath } from '../../../../src/agent/sinks/file.js';
import { Options } from '../../../../src/config/options.js';
import { configureComponent } from '../../../../src/config/registry.js';
import { tempDir } from '../../../support/helpers.js';

describe('file sink', () => {
  it('fills in the template in UTC and numbers parts before the extension', () => {
    const at = new Date('2026-01-02T03:04:05Z');
    expect(renderPath('/a/{{dataset}}-%Y-%m-%d_%H%M%S%%.ndjson', 'web', at)).toBe('/a/web-2026-01-02_030405%.ndjson');
    expect(renderPath('/a/{{ dataset }}/x', 'jobs', at)).toBe('/a/jobs/x');
    expect(partPath('/a/web.ndjson.zst', 'zstd', 0)).toBe('/a/web.ndjson.zst');
    expect(partPath('/a/web.ndjson.zst', 'zstd', 3)).toBe('/a/web~3.ndjson.zst');
    expect(partPath('/a/web.ndjson', 'none', 1)).toBe('/a/web~1.ndjson');
    expect(partPath('/a/web.gz', 'gzip', 2)).toBe('/a/web~2.gz');
  });

  it('refuses a template with fields it does not know, naming the key', () => {
    for (const [path, problem] of [
      ['/a/%Q.log', '"%Q" is not a date field'],
      ['/a/{{host}}.log', '"{{host}}" is not a field'],
      ['/a/b/', 'the path names a directory'],
    ]) {
      expect(() => configureComponent(fileSink, new Options({ type: 'file', path }, 'sinks.archive'))).toThrow(
        `sinks.archive.path: ${problem}`,
      );
    }
  });

  it('writes a batch queued gzip-compressed into its zstd file, each batch ended by a newline, and refuses unsafe dataset names', async () => {
    const dir = tempDir('ferry-filesink-unit-');
    const sink = new FileSink({ path: join(dir, '{{dataset}}.ndjson'), compression: 'zstd', maxBytes: 1 << 20 }, 'app');
    expect(await sink.send(gzipSync('{"a":1}\n{"a":2}'), 'gzip')).toEqual({ kind: 'delivered' });
    expect(await sink.send(Buffer.from('{"a":3}'), 'none')).toEqual({ kind: 'delivered' });
    expect(await sink.send(Buffer.from('{"a":4}'), 'none', { dataset: '../etc' })).toMatchObject({
      kind: 'refused',
      config: false,
    });
    await sink.close();
    expect(readdirSync(dir)).toEqual(['app.ndjson.zst']);
    expect(zstdDecompress(readFileSync(join(dir, 'app.ndjson.zst'))).toString()).toBe('{"a":1}\n{"a":2}\n{"a":3}\n');
  });

  it('says a path it cannot write with its key and the cause in words, and retries', async () => {
    const dir = tempDir('ferry-filesink-unit-');
    writeFileSync(join(dir, 'plain-file'), '');
    const path = join(dir, 'plain-file', '{{dataset}}.ndjson');
    const sink = new FileSink({ path, compression: 'none', maxBytes: 1 << 20 }, 'app', undefined, 'archive');
    expect(await sink.send(Buffer.from('{"a":1}'), 'none')).toEqual({
      kind: 'retry',
      trouble: {
        kind: 'failing',
        message: `sinks.archive.path: ${join(dir, 'plain-file', 'app.ndjson')}: a part of the path is not a directory`,
      },
    });
    await sink.close();
  });
});

describe('file sink with many datasets', () => {
  it('appends again to the file of this run when a dataset comes back after its file was closed', async () => {
    const dir = tempDir('ferry-filesink-unit-');
    const sink = new FileSink({ path: join(dir, '{{dataset}}.ndjson'), compression: 'none', maxBytes: 1 << 20 }, 'app');
    // 20 datasets taking turns, more than the 16 files kept open.
    for (let round = 0; round < 3; round++)
      for (let d = 0; d < 20; d++)
        expect(await sink.send(Buffer.from(`{"r":${round}}`), 'none', { dataset: `ds${d}` })).toEqual({
          kind: 'delivered',
        });
    await sink.close();
    expect(readdirSync(dir)).toHaveLength(20);
    expect(readFileSync(join(dir, 'ds0.ndjson'), 'utf8')).toBe('{"r":0}\n{"r":1}\n{"r":2}\n');
  });
});

describe('console sink', () => {
  it('lets no event forge a line or drive the terminal', () => {
    const line = readableLines('{"message":"ok\\u001b[2J\\nFAKE","level":"in\\u001bfo","k\\u001b":"v\\u001bx"}');
    expect(line).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(line.split('\n')).toHaveLength(2);
    expect(line).toBe('IN\\u001bFO ok\\u001b[2J\\nFAKE k\\u001b="v\\u001bx"\n');
  });

  it('writes each event as one readable line: time, level, dataset, message, the rest as key=value', () => {
    expect(
      readableLines(
        [
          '{"message":"a\\tb","level":"warn","timestamp":"T","n":1,"s":"x y","q":"say \\"hi\\"","nil":null}',
          '{"body":{"not":"a message"}}',
          'not json',
        ].join('\n'),
        'web',
      ),
    ).toBe('T WARN [web] a\\tb n=1 s="x y" q="say \\"hi\\"" nil=null\n[web] body={"not":"a message"}\nnot json\n');
  });
});
