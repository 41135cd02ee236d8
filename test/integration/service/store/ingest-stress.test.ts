/**
 * A 200 from ingest means the events are durable and readable as sent, under any interleaving: many
 * concurrent clients send seeded random shapes (new fields, type changes that widen, nested objects,
 * arrays, nulls) into the same and different datasets, across a restart of the service; afterwards every
 * acknowledged event is read back and compared field by field with what was sent. Each batch draws its
 * options too: a timestamp-field (top-level or nested) in a random timestamp-format, or CSV with a random
 * delimiter, quoting and header form; the event time and every field sent are compared. The seed is random
 * unless FERRY_STRESS_SEED is set, and is printed in any failure.
 */
import { gzipSync } from 'node:zlib';
import { stringify } from 'csv-stringify/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../../../bench/torture.js';
import { startTestService, tempDir, testSeed, type TestService } from '../../../support/helpers.js';

type Sent = Record<string, unknown> & { _id: string };

/**
 * Field families, each with the values it may take and how a value reads back once the field has its
 * final type: `n*` integers and floats (integer and float widen to float), `s*` strings that sometimes
 * get an integer or a boolean (the field widens to string: JSON text), `o*` objects (flattened to
 * `o*.x`, `o*.y`), `a*` arrays (kept whole), and null anywhere.
 */
function randomEvent(rnd: () => number, id: string): Sent {
  const pick = (n: number) => Math.floor(rnd() * n);
  const e: Sent = { _id: id };
  const fields = 1 + pick(6);
  for (let i = 0; i < fields; i++) {
    const family = 'nsoa'[pick(4)]!;
    const name = `${family}${pick(12)}`;
    if (rnd() < 0.08) {
      e[name] = null;
      continue;
    }
    switch (family) {
      case 'n':
        e[name] = rnd() < 0.5 ? pick(1000) - 500 : Math.round(rnd() * 1e6) / 1e3 + 0.5;
        break;
      case 's':
        e[name] = rnd() < 0.8 ? `text ${pick(1e6)}` : rnd() < 0.5 ? pick(100) : rnd() < 0.5;
        break;
      case 'o':
        e[name] = { x: pick(100), y: `y${pick(100)}` };
        break;
      case 'a':
        e[name] = Array.from({ length: pick(4) }, () => (rnd() < 0.5 ? pick(10) : `v${pick(10)}`));
        break;
    }
  }
  return e;
}

/** What a sent field reads back as, given the stored event (flattened objects, widened strings). */
function mismatch(sent: Sent, got: Record<string, unknown>): string | undefined {
  for (const [k, v] of Object.entries(sent)) {
    if (k === '_id') continue;
    if (v === null) {
      const flat = Object.keys(got).filter((g) => g === k || g.startsWith(`${k}.`));
      if (flat.some((g) => got[g] !== null && got[g] !== undefined))
        return `${k}: sent null, got ${JSON.stringify(flat.map((g) => got[g]))}`;
      continue;
    }
    if (k.startsWith('o')) {
      const o = v as { x: number; y: string };
      if (got[`${k}.x`] !== o.x || got[`${k}.y`] !== o.y)
        return `${k}: sent ${JSON.stringify(o)}, got x=${JSON.stringify(got[`${k}.x`])} y=${JSON.stringify(got[`${k}.y`])}`;
    } else if (k.startsWith('a')) {
      if (JSON.stringify(got[k]) !== JSON.stringify(v))
        return `${k}: sent ${JSON.stringify(v)}, got ${JSON.stringify(got[k])}`;
    } else if (k.startsWith('w')) {
      // A nested timestamp-field: kept as the field w*.at, like any string field.
      const at = (v as { at: unknown }).at;
      const expected = typeof at === 'string' ? at : JSON.stringify(at);
      if (got[`${k}.at`] !== expected && got[`${k}.at`] !== at)
        return `${k}.at: sent ${JSON.stringify(at)}, got ${JSON.stringify(got[`${k}.at`])}`;
    } else if (k.startsWith('n')) {
      if (typeof got[k] !== 'number' || Math.abs((got[k] as number) - (v as number)) > 1e-9)
        return `${k}: sent ${JSON.stringify(v)}, got ${JSON.stringify(got[k])}`;
    } else {
      // A string field that also saw an integer or a boolean holds each value's JSON text.
      const expected = typeof v === 'string' ? v : JSON.stringify(v);
      const ok = got[k] === expected || (typeof v !== 'string' && got[k] === v);
      if (!ok) return `${k}: sent ${JSON.stringify(v)}, got ${JSON.stringify(got[k])}`;
    }
  }
  return undefined;
}

/** A batch's time option: the field holding the time, its format, and how a time in ms is written in it. */
interface TimeOption {
  field: string;
  format?: string;
  write: (ms: number) => unknown;
  /** What the stored _time keeps of the written time (a format may drop the milliseconds). */
  precision: number;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** RFC 3339 at a given offset in minutes, milliseconds kept. */
function rfc3339(ms: number, offsetMin: number): string {
  const d = new Date(ms + offsetMin * 60_000);
  const sign = offsetMin < 0 ? '-' : '+';
  const off =
    offsetMin === 0 ? 'Z' : `${sign}${pad(Math.floor(Math.abs(offsetMin) / 60))}:${pad(Math.abs(offsetMin) % 60)}`;
  return `${d.toISOString().slice(0, 23)}${off}`;
}

function randomTimeOption(rnd: () => number): TimeOption {
  const pick = (n: number) => Math.floor(rnd() * n);
  // Top-level t0..t2, or nested under w0..w1 (a timestamp-field with a dot names the nested key).
  const field = rnd() < 0.7 ? `t${pick(3)}` : `w${pick(2)}.at`;
  const offset = [0, 120, -330, 60][pick(4)]!;
  const options: TimeOption[] = [
    { field, write: (ms) => rfc3339(ms, offset), precision: 1 },
    { field, write: (ms) => ms, precision: 1 },
    { field, write: (ms) => Math.floor(ms / 1000), precision: 1000 },
    { field, format: 'RFC3339', write: (ms) => rfc3339(ms, offset), precision: 1 },
    { field, format: 'unix', write: (ms) => Math.floor(ms / 1000), precision: 1000 },
    { field, format: 'unixms', write: (ms) => ms, precision: 1 },
    {
      field,
      format: '2/Jan/2006:15:04:05 -0700',
      write: (ms) => {
        const d = new Date(ms + offset * 60_000);
        const sign = offset < 0 ? '-' : '+';
        return `${d.getUTCDate()}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} ${sign}${pad(Math.floor(Math.abs(offset) / 60))}${pad(Math.abs(offset) % 60)}`;
      },
      precision: 1000,
    },
  ];
  return options[pick(options.length)]!;
}

/** Puts the time option's field into an event (nested fields as an object), with the time it stands for. */
function withTime(e: Sent, opt: TimeOption, ms: number): void {
  const value = opt.write(ms);
  const [top, nested] = opt.field.split('.');
  if (nested) e[top!] = { [nested]: value };
  else e[top!] = value;
}

/** A CSV value: delimiters, quotes, line breaks, spaces, non-ASCII and empty strings among plain text. */
function csvValue(rnd: () => number): string {
  const parts = ['plain', ',', ';', '\t', '|', '"', '""', '\n', '\r\n', ' ', 'é', '日本', '0', '007', 'null', ''];
  return Array.from({ length: Math.floor(rnd() * 4) }, () => parts[Math.floor(rnd() * parts.length)]!).join('');
}

/** CSV values are strings and read back exactly as sent. */
function csvMismatch(sent: Sent, got: Record<string, unknown>): string | undefined {
  for (const [k, v] of Object.entries(sent))
    if (got[k] !== v) return `${k}: sent ${JSON.stringify(v)}, got ${JSON.stringify(got[k])}`;
  return undefined;
}

let svc: TestService | undefined;
afterAll(async () => svc?.stop());

describe('ingest under concurrency (seeded stress)', () => {
  it('every acknowledged event reads back as sent: concurrent clients, random shapes, same and different datasets, across a restart', async () => {
    const { seed, replay: tag } = testSeed(
      'FERRY_STRESS_SEED',
      'npx vitest run test/integration/service/store/ingest-stress.test.ts',
    );
    const dataDir = tempDir();
    svc = await startTestService({}, dataDir);
    const datasets = ['stress-a', 'stress-b', 'stress-c'];
    for (const d of [...datasets, 'stress-csv']) await svc.createDataset(d);
    let token = await svc.apiToken();
    const acknowledged = new Map<string, Sent[]>([...datasets, 'stress-csv'].map((d) => [d, []]));
    /** The event time each event's time field stands for (events without one are not in it). */
    const expectedTime = new Map<string, number>();
    let restarting: Promise<void> | undefined;
    let failedSends = 0;

    const client = async (c: number) => {
      const rnd = seededRandom(seed + c * 7919);
      const pick = (n: number) => Math.floor(rnd() * n);
      for (let b = 0; b < 14; b++) {
        const mode = ['json', 'json', 'time', 'csv'][pick(4)]!;
        const dataset = mode === 'csv' ? 'stress-csv' : datasets[pick(datasets.length)]!;
        const count = pick(3) === 0 ? 2000 + pick(3000) : 1 + pick(50);
        const timeOption = mode === 'csv' ? (rnd() < 0.5 ? randomTimeOption(rnd) : undefined) : undefined;
        const time = mode === 'time' ? randomTimeOption(rnd) : timeOption;
        let body: string;
        let events: Sent[];
        const params = new URLSearchParams();
        const headers: Record<string, string> = { 'content-encoding': 'gzip' };
        if (mode === 'csv') {
          // CSV values are strings: the time column is written as text, and the time is RFC 3339 unless a
          // numeric format was drawn.
          const columns = ['_id', ...new Set(Array.from({ length: 1 + pick(5) }, () => `c${pick(8)}`))];
          if (time && !time.field.includes('.')) columns.push(time.field);
          events = Array.from({ length: count }, (_, i) => {
            const e: Sent = { _id: `c${c}-b${b}-e${i}` };
            for (const col of columns.slice(1)) e[col] = csvValue(rnd);
            return e;
          });
          if (time && !time.field.includes('.'))
            for (const e of events) {
              const ms = 1.6e12 + pick(2e11);
              const at = time.precision === 1000 ? Math.floor(ms / 1000) * 1000 : ms;
              e[time.field] = String(time.write(at));
              expectedTime.set(e._id, at);
            }
          const delimiter = [',', ';', '\t', '|'][pick(4)]!;
          if (delimiter !== ',') params.set('csv-delimiter', delimiter);
          const headerInField = rnd() < 0.3;
          if (headerInField) headers['x-axiom-csv-fields'] = columns.join(',');
          // csv-stringify quotes only values holding its own record delimiter: any line break is quoted here.
          const format = {
            delimiter,
            quoted: rnd() < 0.3,
            quoted_match: /[\r\n]/,
            record_delimiter: rnd() < 0.5 ? 'unix' : 'windows',
          } as const;
          body = stringify(
            [...(headerInField ? [] : [columns]), ...events.map((e) => columns.map((col) => e[col]))],
            format,
          );
          headers['content-type'] = 'text/csv';
        } else {
          events = Array.from({ length: count }, (_, i) => randomEvent(rnd, `c${c}-b${b}-e${i}`));
          if (time)
            for (const e of events) {
              if (rnd() < 0.05) continue; // no time: the receive time, not checked
              const ms = 1.6e12 + pick(2e11);
              const at = time.precision === 1000 ? Math.floor(ms / 1000) * 1000 : ms;
              withTime(e, time, at);
              expectedTime.set(e._id, at);
            }
          body = events.map((e) => JSON.stringify(e)).join('\n');
          headers['content-type'] = 'application/x-ndjson';
        }
        // CSV has no nested fields: a nested time option is dropped there.
        if (time && !(mode === 'csv' && time.field.includes('.'))) {
          params.set('timestamp-field', time.field);
          if (time.format) params.set('timestamp-format', time.format);
        }
        await restarting;
        const current = svc!;
        try {
          const r = await current.call('POST', `/v1/ingest/${dataset}?${params}`, gzipSync(body), token, headers);
          const answer = (await r.json()) as {
            ingested?: number;
            failed?: number;
            message?: string;
            failures?: unknown[];
          };
          const what = `${tag}: ${mode} batch ${params} ${JSON.stringify(headers)} ${JSON.stringify(answer.failures?.slice(0, 2))}`;
          expect(r.status, `${what}: ${answer.message}`).toBe(200);
          expect(answer, what).toMatchObject({ ingested: events.length, failed: 0 });
          acknowledged.get(dataset)!.push(...events);
        } catch (e) {
          // Only a request cut by the restart may fail; its batch is not acknowledged, so not checked.
          if (!(e instanceof TypeError)) throw e;
          failedSends++;
        }
        await new Promise((r) => setTimeout(r, pick(20)));
      }
    };
    const clients = Array.from({ length: 6 }, (_, c) => client(c));
    // Halfway, the service restarts on the same data dir (its known fields are read again from the catalog).
    await new Promise((r) => setTimeout(r, 1500));
    restarting = (async () => {
      const old = svc!;
      await old.close();
      svc = await startTestService({}, dataDir);
      token = await svc.apiToken();
    })();
    await restarting;
    await Promise.all(clients);

    let checked = 0;
    for (const [d, sent] of acknowledged) {
      const stored = await svc.store.readEvents(d, { limit: 10_000_000 });
      const byId = new Map(stored.map((e) => [e._id as string, e]));
      const problems: string[] = [];
      for (const e of sent) {
        const got = byId.get(e._id);
        const at = expectedTime.get(e._id);
        const why = !got
          ? 'missing'
          : at !== undefined && Date.parse(got._time as string) !== at
            ? `_time: sent ${new Date(at).toISOString()}, got ${String(got._time)}`
            : d === 'stress-csv'
              ? csvMismatch(e, got)
              : mismatch(e, got);
        if (why) problems.push(`${d} ${e._id}: ${why}`);
        checked++;
      }
      expect(
        problems.slice(0, 5),
        `${tag}: ${problems.length} of ${sent.length} events in ${d} do not read back as sent`,
      ).toEqual([]);
    }
    console.log(
      `ingest stress: ${tag}: ${checked} acknowledged events compared field by field; ${failedSends} send(s) cut by the restart`,
    );
    expect(checked).toBeGreaterThan(10_000);
  }, 180_000);
});
