/**
 * A metrics body's series crossing from the OTLP worker (SeriesShipper) to the main thread (SeriesMirror):
 * each body reads back as the series shipped, whatever crossed before; a series crosses whole once an
 * epoch, then as its number; the numbers of an epoch that ended are let go; a number never sent is an error.
 */
import { describe, expect, it } from 'vitest';
import { SeriesMirror, SeriesMirrorLost, SeriesShipper, type SeriesEntry } from '../../../src/ingest/series-mirror.js';
import { testSeed } from '../../support/helpers.js';

const entry = (gid: number, name: string): SeriesEntry => ({
  gid,
  key: `"${name}"{"host":"h\\t1"}`,
  rest: `"m":"${name}","tags":{"host":"h\\t1"},"type":"Gauge","temp":null,"unit":null}`,
});

describe('series crossing to the main thread', () => {
  it('read back as shipped, body after body, across epochs (seeded)', () => {
    const { rnd, replay } = testSeed('SERIES_MIRROR_SEED', 'npx vitest run test/unit/ingest/series-mirror.test.ts');
    const shipper = new SeriesShipper();
    const mirror = new SeriesMirror();
    let epochStart = 0;
    let nextGid = 0;
    let kept: SeriesEntry[] = [];
    let freshBytes = 0;
    for (let body = 0; body < 400; body++) {
      // Now and then the worker's cache starts afresh: its kept series are dropped, new ones numbered on.
      if (rnd() < 0.05) {
        epochStart = nextGid;
        kept = kept.filter(() => rnd() < 0.2); // some still named by the body being read, at most this once
      }
      const series: SeriesEntry[] = [];
      for (let i = 0; i < 1 + Math.floor(rnd() * 20); i++) {
        const r = rnd();
        if (r < 0.5 && kept.length) series.push(kept[Math.floor(rnd() * kept.length)]!);
        else if (r < 0.85) {
          const e = entry(nextGid++, `m${nextGid}`);
          kept.push(e);
          series.push(e);
        } else series.push(entry(-1, `inline${body}.${i}`));
      }
      const shipped = shipper.ship(series, epochStart);
      freshBytes += shipped.fresh.length;
      const got = mirror.receive(shipped);
      expect(
        got.map((e) => [e.gid, e.key, e.rest]),
        `${replay}, body ${body}`,
      ).toEqual(series.map((e) => [e.gid, e.key, e.rest]));
      // Series of ended epochs are not named again.
      kept = kept.filter((e) => e.gid >= epochStart);
      expect(mirror.size, replay).toBeLessThanOrEqual(nextGid - epochStart);
    }
    // Most bodies named series sent before: those crossed as numbers only.
    expect(freshBytes).toBeLessThan(400 * 20 * 100);
  });

  it('refuses a number it was never sent, and keeps a body cut from its text alone', () => {
    const mirror = new SeriesMirror();
    expect(() => mirror.receive({ gids: new Float64Array([3]), fresh: '', inline: '', epochStart: 0 })).toThrow(
      SeriesMirrorLost,
    );
    expect(() => mirror.receive({ gids: new Float64Array([-2]), fresh: '', inline: 'a\tb', epochStart: 0 })).toThrow(
      SeriesMirrorLost,
    );
    const shipper = new SeriesShipper();
    const e = entry(0, 'cpu');
    const [got] = mirror.receive(shipper.ship([e], 0));
    expect(got).toEqual(e);
    // The second time the series crosses as its number, and is the entry kept the first time.
    const again = shipper.ship([e], 0);
    expect(again.fresh).toBe('');
    expect(mirror.receive(again)[0]).toBe(got);
    // Numbers past 32 bits (a worker that has described billions of series) cross exactly.
    const far = entry(2 ** 32 + 5, 'far');
    expect(mirror.receive(shipper.ship([far, e], 0))).toEqual([far, e]);
  });
});
