/**
 * One meaning per APL function: expressions an agent's event pipeline evaluates in JavaScript
 * (src/apl/js/) give what the store's SQL gives for the same events. A corpus of events is ingested into a
 * real service and queried there (`extend r = E`, `where P`), and the same expressions run on the same
 * events through compileEventPipeline; every value is compared. The store has typed columns (it inferred
 * them on ingest), the pipeline none (every field is dynamic): the conversions must agree too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileEventPipeline, type EventFields } from '../../../src/apl/js/pipeline.js';
import { startTestService, type TestService } from '../../support/helpers.js';

const CORPUS: Record<string, unknown>[] = Array.from({ length: 40 }, (_, i) => {
  const e: Record<string, unknown> = {
    _time: new Date(Date.UTC(2026, 10, 1, 0, 0, i)).toISOString(),
    id: i,
    msg: ['GET /index.html', 'post /api/v1/Orders', 'déjà vu ✓', 'Ünïcode ÉTÉ', 'a "quoted" \\ path', ''][i % 6],
    flag: i % 3 === 0,
    ts: `2026-11-0${1 + (i % 5)}T1${i % 10}:00:00${i % 2 ? '.123456789' : ''}Z`,
    span: ['1.5s', '300ms', '2h45m', '-1m', '0'][i % 5],
    pad: `  p${i}  `,
    attrs: { region: ['eu', 'us', 'ap'][i % 3], n: i * 2 },
  };
  if (i % 7 !== 6) e.status = [200, 201, 304, 404, 500, 503, -3][i % 7];
  if (i % 5 !== 4) e.dur = [0.25, 1.5, 1000.125, -2.5][i % 4];
  if (i % 4 === 1) e.opt = i % 8 === 1 ? '' : `o${i}`;
  if (i % 3 !== 2) e.tags = ['a', 'b', 'c'].slice(0, i % 4);
  if (i % 8 !== 7)
    e.ip = ['10.1.2.3', '192.168.7.1/16', '8.8.8.8', '172.16.5.4', '256.1.1.1', 'x', '172.32.0.1/40'][i % 7];
  if (i % 5 !== 3) e.b64 = ['aGVsbG8=', 'w6k=', 'not base64!', '', '/w=='][i % 5];
  return e;
});

const EXPRESSIONS = [
  // comparison and logic
  'status >= 500',
  'status == 200',
  'status != 200',
  'status < 300',
  'dur > 0.5',
  'dur <= 1.5',
  "msg == 'GET /index.html'",
  "msg != ''",
  'flag == true',
  'not(flag)',
  'flag and status > 300',
  'flag or isnull(opt)',
  'status between (200 .. 404)',
  'status !between (200 .. 404)',
  'status in (200, 404)',
  'status !in (200, 500)',
  "msg in~ ('get /index.html', 'DÉJÀ VU ✓')",
  "attrs.region in ('eu', 'ap')",
  // string operators
  "msg contains 'get'",
  "msg !contains 'api'",
  "msg contains_cs 'GET'",
  "msg startswith 'post'",
  "msg !startswith 'GET'",
  "msg endswith 'HTML'",
  "msg has 'api'",
  "msg has 'v1'",
  "msg !has 'index'",
  "msg hasprefix 'ord'",
  "msg hassuffix 'ers'",
  "msg has_cs 'Orders'",
  "msg =~ 'get /index.html'",
  "msg !~ 'get /index.html'",
  "msg matches regex '^[a-z]+ /'",
  "msg has_any ('api', 'vu')",
  // arithmetic
  'status + 1',
  'status - dur',
  'status * 2',
  'status / 7',
  'status % 7',
  'dur * 2',
  'dur / 4',
  '-status',
  'attrs.n + 1',
  '_time + 1h',
  '_time - todatetime(ts)',
  // conversions
  'tostring(status)',
  'tostring(dur)',
  'tostring(flag)',
  'tolong(dur)',
  'toint(status)',
  'toreal(status)',
  'tobool(flag)',
  "tolong('12')",
  'todatetime(ts)',
  'tostring(todatetime(ts))',
  'totimespan(span)',
  'tostring(totimespan(span))',
  // strings and conditionals
  'strlen(msg)',
  'tolower(msg)',
  'toupper(msg)',
  'substring(msg, 1, 3)',
  'substring(msg, 2)',
  "strcat(msg, '-', status)",
  "strcat_delim(',', msg, status, flag)",
  "replace_string(msg, '/', '|')",
  'trim_space(pad)',
  "iff(status >= 400, 'bad', 'ok')",
  "case(status < 300, 'ok', status < 500, 'client', 'server')",
  "coalesce(opt, 'none')",
  'isnull(opt)',
  'isnotnull(status)',
  'isempty(opt)',
  'isnotempty(opt)',
  'attrs.region',
  'tostring(attrs.region)',
  '_time > datetime(2026-11-01T00:00:20Z)',
  // math
  'abs(status)',
  'abs(dur)',
  'sqrt(dur)',
  'pow(status, 2)',
  'log(dur)',
  'log10(status)',
  'exp(dur)',
  'sign(dur)',
  'floor(dur)',
  'ceiling(dur)',
  'round(dur)',
  'round(dur, 1)',
  'bin(status, 100)',
  'bin(dur, 0.5)',
  'bin(_time, 7s)',
  'bin(todatetime(ts), 1d)',
  'isnan(dur)',
  'isfinite(dur)',
  // strings, hashes, time parts, dynamic values
  'reverse(msg)',
  'hash_md5(msg)',
  'hash_sha1(msg)',
  'hash_sha256(msg)',
  'hourofday(todatetime(ts))',
  'dayofweek(_time)',
  'getyear(_time)',
  'getmonth(_time)',
  'dayofmonth(todatetime(ts))',
  'startofday(todatetime(ts))',
  'gettype(status)',
  'gettype(dur)',
  'gettype(msg)',
  'gettype(attrs.n)',
  'gettype(tags)',
  'array_length(tags)',
  'parse_json(msg)',
  `tostring(parse_json('{"a":[1,2]}'))`,
  // regular expressions and more strings
  "extract('/api/(v[0-9]+)/', 1, msg)",
  "extract('[A-Z]+', 0, msg)",
  "replace_regex('[aeiou]', '_', msg)",
  "replace_regex('(/[a-z]+)', '[$1]', msg)",
  "split(msg, '/')",
  "split(msg, ' ')",
  "trim(' p', pad)",
  "trim_start(' ', pad)",
  "trim_end(' ', pad)",
  "countof(msg, '/')",
  "strrep(msg, 2, '|')",
  'base64_encode_tostring(msg)',
  "strcmp(msg, 'm')",
  'max_of(status, 300)',
  'min_of(dur, 1.0)',
  'unixtime_seconds_todatetime(status)',
  'unixtime_milliseconds_todatetime(dur)',
  'isstring(msg)',
  'isstring(status)',
  "todynamic('[1,2]')",
  // a field's value has its own type, as the store's column has the type inferred from its values
  'tobool(status)',
  'todatetime(status)',
  'totimespan(status)',
  'status > 1s',
  'toreal(flag)',
  'tolong(flag)',
  // IP addresses
  'parse_ipv4(ip)',
  "ipv4_is_in_range(ip, '10.0.0.0/8')",
  "ipv4_is_in_range(ip, '192.168.0.0/16')",
  'ipv4_is_private(ip)',
  "ipv4_compare(ip, '10.1.2.4')",
  "ipv4_compare(ip, '192.168.0.0', 16)",
  "ipv4_is_match(ip, '8.8.8.8')",
  'ipv4_netmask_suffix(ip)',
  // calendar
  "datetime_add('month', 1, todatetime(ts))",
  "datetime_add('year', -1, _time)",
  "datetime_add('quarter', 3, datetime(2024-11-30T10:00:00Z))",
  "datetime_add('hour', status, _time)",
  "datetime_add('millisecond', 5, todatetime(ts))",
  "datetime_diff('day', todatetime(ts), _time)",
  "datetime_diff('hour', todatetime(ts), _time)",
  "datetime_diff('month', todatetime(ts), datetime(2025-01-31))",
  "datetime_diff('year', _time, datetime(2020-12-31T23:59:59Z))",
  "datetime_diff('week', todatetime(ts), datetime(2026-01-01))",
  "datetime_diff('second', todatetime(ts), _time)",
  "datetime_diff('millisecond', todatetime(ts), _time)",
  "datetime_diff('nanosecond', todatetime(ts), _time)",
  "datetime_part('week', todatetime(ts))",
  "datetime_part('quarter', _time)",
  "datetime_part('millisecond', todatetime(ts))",
  "datetime_part('nanosecond', todatetime(ts))",
  'dayofyear(todatetime(ts))',
  'week_of_year(datetime(2027-01-01))',
  'week_of_year(todatetime(ts))',
  'startofday(_time, -1)',
  'startofweek(todatetime(ts))',
  'startofmonth(todatetime(ts))',
  'startofyear(_time)',
  'startofmonth(_time, -2)',
  'endofday(todatetime(ts))',
  'endofweek(_time)',
  'endofmonth(todatetime(ts))',
  'endofyear(_time, 1)',
  // math
  'sin(dur)',
  'cos(status)',
  'tan(dur)',
  'asin(dur)',
  'acos(dur / 10)',
  'atan(dur)',
  'atan2(dur, status)',
  'degrees(dur)',
  'radians(status)',
  'exp2(dur)',
  'exp10(dur)',
  'pi() * dur',
  // strings
  'url_encode(msg)',
  "url_decode('a%20b%2Fc')",
  'url_decode(msg)',
  'base64_decode_tostring(b64)',
  'hash_sha512(msg)',
  'totitle(msg)',
  "indexof(msg, '/')",
  "indexof(msg, 'vu')",
  "indexof(msg, '')",
  'url_encode("a!b\'()*~ é")',
  "url_decode('100%')",
  "url_decode('%zz%41')",
  "totitle('ßa')",
  "totitle('ﬁx')",
  "base64_decode_tostring('77u/YQ==')",
  "pack('a', 1, 'a', 2)",
  'string_size(msg)',
  'len(msg)',
  'len(tags)',
  'len(status)',
  'isreal(dur)',
  'isreal(status)',
  'isreal(msg)',
  'isbool(flag)',
  'isbool(status)',
  'isarray(tags)',
  'isarray(msg)',
  'ismap(parse_json(\'{"a":1}\'))',
  'ismap(tags)',
  "strcat_array(tags, '-')",
  "strcat_array(pack_array(1, 'a', dur, flag), ',')",
  "set_has_element(tags, 'b')",
  'set_has_element(pack_array(200, 404), status)',
  "set_union(tags, pack_array('z', 'a'))",
  "set_intersect(tags, pack_array('a', 'c'))",
  "set_difference(tags, pack_array('a'))",
  "extract_all('[a-z]+', msg)",
  "extract_all('(/[a-z]+)', msg)",
  "extract_all('/(v)([0-9])', msg)",
  "extract_all('([a-z])([a-z])', dynamic([2]), msg)",
  "extract_all('x*', 'axxb')",
  "parse_url(strcat('https://u:p@h.example:8443/a/', id, '?x=1&y=a%20b&x=2#frag'))",
  'parse_url(msg)',
  "parse_url('http://h/p?k')",
  "parse_urlquery(strcat('a=', id, '&b=x%2By&a=2&&c'))",
  "parse_urlquery('?k=v')",
  'parse_urlquery(opt)',
  // arrays and bags
  'pack_array(status, msg, _time)',
  "bag_pack('s', status, 'm', msg)",
  "pack('d', dur)",
  'array_concat(tags, pack_array(1))',
  'array_sum(pack_array(status, dur))',
  "array_index_of(tags, 'b')",
  'array_slice(tags, 0, 1)',
  'array_slice(tags, -2, -1)',
  'array_reverse(tags)',
  "bag_has_key(bag_pack('k', status), 'k')",
  "bag_has_key(parse_json(msg), 'nope')",
];

let svc: TestService;
let token: string;

async function query(apl: string): Promise<Map<number, unknown>> {
  const r = await svc.call(
    'POST',
    '/v1/datasets/_apl?format=tabular',
    { apl, startTime: '2026-10-01T00:00:00Z', endTime: '2026-12-01T00:00:00Z' },
    token,
  );
  const body = (await r.json()) as {
    message?: string;
    tables: { fields: { name: string }[]; columns: unknown[][] }[];
  };
  if (r.status !== 200) throw new Error(`${apl}: ${r.status} ${body.message}`);
  const t = body.tables[0]!;
  const id = t.fields.findIndex((f) => f.name === 'id');
  const value = t.fields.findIndex((f) => f.name === 'r');
  return new Map(t.columns[id]!.map((v, i) => [v as number, value >= 0 ? t.columns[value]![i] : true]));
}

/**
 * Reals that differ in their last bits only: the transcendental functions (sin, pow…) of V8 and of the
 * C library DuckDB calls are each within an ulp or two of the true value, not always the same one.
 */
function lastBits(a: unknown, b: unknown): boolean {
  return (
    typeof a === 'number' && typeof b === 'number' && a !== b && Math.abs(a - b) <= 4 * Number.EPSILON * Math.abs(b)
  );
}

function event(fields: Record<string, unknown>): EventFields {
  return {
    data: structuredClone(fields),
    set(k, v) {
      (this.data as Record<string, unknown>)[k] = v;
    },
    put(k, v) {
      (this.data as Record<string, unknown>)[k] = v;
    },
    delete(k) {
      delete (this.data as Record<string, unknown>)[k];
    },
    replace(f) {
      (this as { data: Record<string, unknown> }).data = f;
    },
  };
}

beforeAll(async () => {
  svc = await startTestService();
  await svc.createDataset('corpus');
  token = await svc.apiToken();
  const r = await svc.call(
    'POST',
    '/v1/datasets/corpus/ingest',
    CORPUS.map((e) => JSON.stringify(e)).join('\n'),
    token,
    { 'content-type': 'application/x-ndjson' },
  );
  expect(r.status).toBe(200);
});
afterAll(async () => svc?.stop());

describe('APL in an event pipeline means what it means in the store', () => {
  it('extend: every expression gives the store value for every event of the corpus', async () => {
    const mismatches: string[] = [];
    for (const expr of EXPRESSIONS) {
      const stored = await query(`['corpus'] | extend r = ${expr} | project id, r`);
      let pipeline;
      try {
        pipeline = compileEventPipeline(`extend r = ${expr}`);
      } catch (err) {
        mismatches.push(`${expr}: ${(err as Error).message}`);
        continue;
      }
      for (const fields of CORPUS) {
        const e = event(fields);
        expect(pipeline.run(e)).toBe(true);
        const mine = e.data.r ?? null;
        const theirs = stored.get(fields.id as number) ?? null;
        if (JSON.stringify(mine) !== JSON.stringify(theirs) && !lastBits(mine, theirs))
          mismatches.push(
            `${expr} on event ${String(fields.id)}: pipeline ${JSON.stringify(mine)}, store ${JSON.stringify(theirs)}`,
          );
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('parse, parse-where, parse-kv and redact: the fields they make are the store values', async () => {
    // Each pipeline, and the fields it makes or changes (compared as the store's project shows them).
    const cases: [string, string[]][] = [
      ["parse msg with verb ' /' path", ['verb', 'path']],
      ["parse msg with * '/' seg1 '/' seg2", ['seg1', 'seg2']],
      ["parse ts with y:long '-' m:long '-' d:long 'T' rest", ['y', 'm', 'd', 'rest']],
      ["parse kind=relaxed ts with y:long '-' m:long 'x' rest", ['y', 'm', 'rest']],
      ["parse kind=regex msg with @'([a-zA-Z]+) /' verb:string", ['verb']],
      ["parse-where msg with verb ' /api/' version '/' thing", ['verb', 'version', 'thing']],
      [
        "extend kv = strcat('a=', id, ';b=\"x y\";c=', status, ';d=') | parse-kv kv as (a:long, b, c:long, d, e) with (pair_delimiter=';', kv_delimiter='=', quote='\"')",
        ['a', 'b', 'c', 'd', 'e'],
      ],
      [
        "extend kv = strcat('k ', id, ' v ', status) | parse-kv kv as (k, v:long) with (pair_delimiter=' ', kv_delimiter=' ')",
        ['k', 'v'],
      ],
      // Fields not named stay as they were.
      ["redact @'\\d+' on pad, msg", ['pad', 'msg', 'ts', 'span']],
      ["redact replaceToken='#' @'[aeiou]' on msg", ['msg', 'opt']],
      ["redact replaceHash=true @'p\\d+' on pad", ['pad']],
      ["redact redactGroups=true @'/(api)/v(\\d)' on msg", ['msg']],
      ["redact @'[0-9]'", ['pad', 'msg', 'ts', 'span', 'opt']],
    ];
    const mismatches: string[] = [];
    for (const [text, fields] of cases) {
      const stored = await svc.call(
        'POST',
        '/v1/datasets/_apl?format=tabular',
        {
          apl: `['corpus'] | ${text} | project id, ${fields.map((f) => `['${f}']`).join(', ')}`,
          startTime: '2026-10-01T00:00:00Z',
          endTime: '2026-12-01T00:00:00Z',
        },
        token,
      );
      const body = (await stored.json()) as {
        message?: string;
        tables: { fields: { name: string }[]; columns: unknown[][] }[];
      };
      if (stored.status !== 200) throw new Error(`${text}: ${stored.status} ${body.message}`);
      const t = body.tables[0]!;
      const rows = new Map(
        t.columns[0]!.map((id, i) => [
          id as number,
          Object.fromEntries(fields.map((f, j) => [f, t.columns[j + 1]![i] ?? null])),
        ]),
      );
      const pipeline = compileEventPipeline(text);
      for (const source of CORPUS) {
        const e = event(source);
        const kept = pipeline.run(e);
        const theirs = rows.get(source.id as number);
        if (kept !== (theirs !== undefined)) {
          mismatches.push(`${text} on event ${String(source.id)}: pipeline ${kept ? 'kept' : 'dropped'} it`);
          continue;
        }
        if (!kept) continue;
        for (const f of fields) {
          const mine = e.data[f] ?? null;
          if (JSON.stringify(mine) !== JSON.stringify(theirs![f]))
            mismatches.push(
              `${text}: ${f} of event ${String(source.id)}: pipeline ${JSON.stringify(mine)}, store ${JSON.stringify(theirs![f])}`,
            );
        }
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('where: keeps the events the store keeps', async () => {
    for (const expr of EXPRESSIONS.slice(0, 34)) {
      const stored = await query(`['corpus'] | where ${expr} | project id`);
      const pipeline = compileEventPipeline(`where ${expr}`);
      const kept = CORPUS.filter((f) => pipeline.run(event(f))).map((f) => f.id);
      expect(kept, expr).toEqual([...stored.keys()].sort((a, b) => a - b));
    }
  });
});
