/**
 * Every DuckDB statement holds a thread of libuv's pool while it runs, the pool every file write and zlib
 * stream of the process waits for too. With libuv's default of four threads, four long queries held an
 * ingest of two events until the first of them ended (12.4 s). Against the real `ferry serve`, started
 * with that default: the store opens fewer connections, says so at start, and an ingest sent while four
 * long queries run is answered before any of them; started with the daemon's sixteen, changes to the
 * catalog are too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN, serveProcess, type ServeProcess, tempDir } from '../../../support/helpers.js';

const started: ServeProcess[] = [];
afterAll(() => {
  for (const s of started) s.child.kill('SIGKILL');
});

// A statement of a few seconds inside DuckDB alone (no JavaScript function), light on memory.
const LONG =
  "print x=range(1,90000,1) | mv-expand x | extend y = strrep(tostring(x), 40) | extend z = replace_regex(y, '([0-9])+', 'ab') | summarize dcount(z)";

async function send(url: string, path: string, body: string, token: string, type = 'application/json') {
  const r = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': type },
    body,
  });
  return { status: r.status, text: await r.text(), at: Date.now() };
}

describe("the store's connections and libuv's thread pool", () => {
  it("with libuv's four threads, an ingest sent while four long queries run is answered before any of them, and the start says why it opened fewer connections", async () => {
    const s = await serveProcess(tempDir('ferry-pool-'), 'service:\n  query_timeout: 60s\n', {
      UV_THREADPOOL_SIZE: '4',
    });
    started.push(s);
    expect((await send(s.url, '/v2/datasets', JSON.stringify({ name: 'd' }), ADMIN)).status).toBe(200);
    const created = await send(
      s.url,
      '/v2/tokens',
      JSON.stringify({ name: 'i', datasetCapabilities: { d: { ingest: ['create'] } } }),
      ADMIN,
    );
    const token = (JSON.parse(created.text) as { token: string }).token;
    const warning = s.log.find((l) => l.includes("libuv's thread pool has 4 threads"));
    expect(warning).toMatch(/UV_THREADPOOL_SIZE=\d+ or more/);

    const long = Array.from({ length: 4 }, () => send(s.url, '/v1/query/_apl', JSON.stringify({ apl: LONG }), ADMIN));
    await new Promise((r) => setTimeout(r, 300));
    const ingest = await send(s.url, '/v1/ingest/d', '{"a":1}\n{"a":2}', token, 'application/x-ndjson');
    const answers = await Promise.all(long);
    expect(ingest.status).toBe(200);
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(ingest.at).toBeLessThan(Math.min(...answers.map((a) => a.at)));
  }, 120_000);

  it("with the daemon's sixteen threads, the store opens all its connections and says nothing of the pool; a dataset and a token made while four long queries run are answered before any of them", async () => {
    const s = await serveProcess(tempDir('ferry-pool-'), 'service:\n  query_timeout: 60s\n', {
      UV_THREADPOOL_SIZE: '16',
    });
    started.push(s);
    expect((await send(s.url, '/v1/query/_apl', JSON.stringify({ apl: 'print x = 1' }), ADMIN)).status).toBe(200);
    expect(s.log.some((l) => l.includes('thread pool'))).toBe(false);
    // The catalog has connections of its own: before, queries and the catalog shared four.
    const long = Array.from({ length: 4 }, () => send(s.url, '/v1/query/_apl', JSON.stringify({ apl: LONG }), ADMIN));
    await new Promise((r) => setTimeout(r, 300));
    const dataset = await send(s.url, '/v2/datasets', JSON.stringify({ name: 'made' }), ADMIN);
    const token = await send(
      s.url,
      '/v2/tokens',
      JSON.stringify({ name: 't', datasetCapabilities: { made: { query: ['read'] } } }),
      ADMIN,
    );
    const answers = await Promise.all(long);
    expect(dataset.status, dataset.text).toBe(200);
    expect(token.status, token.text).toBe(200);
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(Math.max(dataset.at, token.at)).toBeLessThan(Math.min(...answers.map((a) => a.at)));
  }, 120_000);
});
