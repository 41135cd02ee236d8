/**
 * A metrics batch's series, and how they cross from the OTLP worker to the main thread. A series is a
 * SeriesEntry: its key (its metric's JSON text followed by its tags' as canonical JSON) and the rest of its
 * line (`"m":…,"tags":…,"type":…,"temp":…,"unit":…}`, what follows `{"i":n,` in the metrics store's line).
 *
 * The worker keeps the series it described (otlp-metrics.ts), each with a number of its own (`gid`), and
 * an exporter sends the same series export after export: so a series crosses once, and after that only
 * its number does. The worker's SeriesShipper sends each described series the first time a body holds it
 * (and series described for one body alone every time); the main thread's SeriesMirror keeps what was
 * sent, for as long as the worker may name it: until the worker's cache starts afresh (an epoch: numbers
 * before its first are dropped once the body that began it is read) or the worker is replaced. Pure.
 */

export interface SeriesEntry {
  key: string;
  rest: string;
  /** Its number among the series the worker described; -1 for one described for its body alone. */
  gid: number;
}

/**
 * A body's series as they cross: a number each (>= 0: a gid; < 0: -(k + 1), the k-th of `inline`), as
 * doubles: a worker's gids only grow, and a double holds them exactly for longer than any worker runs.
 */
export interface ShippedSeries {
  gids: Float64Array;
  /** Lines `gid\tkey\trest` of the series crossing for the first time (keys and lines are JSON: no tab or newline inside). */
  fresh: string;
  /** Lines `key\trest` of the series described for this body alone. */
  inline: string;
  /** The first gid of the worker's current epoch: lower ones will not be named again. */
  epochStart: number;
}

/** The worker's side: which described series the main thread has been sent, in the current epoch. */
export class SeriesShipper {
  private sent = new WeakSet<SeriesEntry>();
  private epochStart = 0;

  ship(series: readonly SeriesEntry[], epochStart: number): ShippedSeries {
    if (epochStart !== this.epochStart) {
      // The main thread drops the numbers of earlier epochs: a series of one still named is sent again.
      this.sent = new WeakSet();
      this.epochStart = epochStart;
    }
    const gids = new Float64Array(series.length);
    const fresh: string[] = [];
    const inline: string[] = [];
    for (let i = 0; i < series.length; i++) {
      const e = series[i]!;
      if (e.gid < 0) {
        inline.push(`${e.key}\t${e.rest}`);
        gids[i] = -inline.length;
        continue;
      }
      if (!this.sent.has(e)) {
        this.sent.add(e);
        fresh.push(`${e.gid}\t${e.key}\t${e.rest}`);
      }
      gids[i] = e.gid;
    }
    return { gids, fresh: fresh.join('\n'), inline: inline.join('\n'), epochStart };
  }
}

/** Thrown when a body names a series the mirror was never sent: the worker and the mirror are out of step. */
export class SeriesMirrorLost extends Error {}

/** The main thread's side: the series the worker sent, by gid. One mirror for one worker. */
export class SeriesMirror {
  private readonly byGid = new Map<number, SeriesEntry>();
  private epochStart = 0;

  /** A body's series, read from what crossed. */
  receive(s: ShippedSeries): SeriesEntry[] {
    if (s.fresh)
      for (const line of s.fresh.split('\n')) {
        const a = line.indexOf('\t');
        const b = line.indexOf('\t', a + 1);
        const gid = Number(line.slice(0, a));
        this.byGid.set(gid, { gid, key: copied(line.slice(a + 1, b)), rest: copied(line.slice(b + 1)) });
      }
    const inline = s.inline ? s.inline.split('\n') : [];
    const out = new Array<SeriesEntry>(s.gids.length);
    for (let i = 0; i < s.gids.length; i++) {
      const g = s.gids[i]!;
      if (g >= 0) {
        const e = this.byGid.get(g);
        if (!e) throw new SeriesMirrorLost(`the OTLP decoder named series ${g}, which it never sent`);
        out[i] = e;
      } else {
        const line = inline[-g - 1];
        if (line === undefined)
          throw new SeriesMirrorLost(`the OTLP decoder named inline series ${-g - 1} of ${inline.length}`);
        const tab = line.indexOf('\t');
        out[i] = { gid: -1, key: line.slice(0, tab), rest: line.slice(tab + 1) };
      }
    }
    if (s.epochStart > this.epochStart) {
      for (const gid of this.byGid.keys()) if (gid < s.epochStart) this.byGid.delete(gid);
      this.epochStart = s.epochStart;
    }
    return out;
  }

  /** Series held (tests). */
  get size(): number {
    return this.byGid.size;
  }
}

/** A string of its own: a slice of a body's text would keep the whole text alive as long as it is held. */
const copied = (s: string) => Buffer.from(s).toString();
