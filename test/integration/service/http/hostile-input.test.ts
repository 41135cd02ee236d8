/**
 * The service under hostile input (bench/fuzz.ts) against the real `ferry serve`: ingest bodies of every
 * format and encoding, whole and broken; APL token soups and pipelines of every operator; legacy queries;
 * odd paths and credentials, names objects inherit, and queries hungry for time and memory. Every answer is
 * a 2xx or a 4xx with {code, message}, never a 5xx, and the events acknowledged before are all still there;
 * the process stays up, no query answers past query_timeout + 2 s, another client is answered within 1 s
 * throughout, and the resident memory stays under memory_limit + 256 MB. The suite replays one schedule (FERRY_FUZZ_SEED picks
 * another) so that a landing never depends on which seed was drawn; `npm run fuzz -- --minutes N` draws
 * new seeds, and a bug it finds gets a test of its own and may become this seed.
 */
import { describe, expect, it } from 'vitest';
import { fuzz } from '../../../../bench/fuzz.js';

describe('hostile input (seeded fuzz)', () => {
  it('no input answers 5xx or breaks the error shape, and acknowledged events stay', async () => {
    // This schedule found zstd errors and too-wide datasets answering 500 (fixed since).
    const seed = process.env.FERRY_FUZZ_SEED ? Number(process.env.FERRY_FUZZ_SEED) : 1150404200;
    const r = await fuzz({ seed, durationMs: 30_000 });
    const summary = `seed ${seed}: ${r.requests} requests, by status ${JSON.stringify(r.byStatus)}, slowest ${JSON.stringify(r.slowest)}, slowest GET /v2/user beside them ${r.slowestUserMs} ms, peak RSS ${r.peakRssMb} MB during ${r.peakDuring} (replay: FERRY_FUZZ_SEED=${seed} npx vitest run test/integration/service/http/hostile-input.test.ts)`;
    console.log(summary);
    expect(r.requests, summary).toBeGreaterThan(200);
    expect(
      Object.keys(r.byStatus).some((s) => s.startsWith('4')),
      summary,
    ).toBe(true);
    expect(r.violations, summary).toEqual([]);
  }, 120_000);
});
