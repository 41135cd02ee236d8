/**
 * One or more realistic queries for every operator and function of APL's documented reference (apl.md
 * 2.1-2.4), in the style of the docs' examples, each with the answer computed here from the generated
 * events (./data.ts), independently of Ferry: with JavaScript's Math, node:crypto and Date, or by hand.
 */
import { createHash } from 'node:crypto';
import type { AiEvent, HttpEvent, TraceEvent } from './data.js';

export interface Case {
  /** The documented operator or function the query shows. */
  feature: string;
  apl: string;
  /** The first column of the answer: its first value (`value`) or all its values (`column`). */
  want: unknown;
  read?: 'value' | 'column';
  /** Axiom's parser (0.2.5) rejects the query although Axiom runs it (an operator it does not parse). */
  lags?: boolean;
}

export interface Data {
  http: HttpEvent[];
  traces: TraceEvent[];
  ai: AiEvent[];
}

const H = "['sample-http-logs']";
const T = "['otel-demo-traces']";
const A = "['ai-logs']";

/** A datetime as Ferry prints it: RFC 3339, UTC, the fraction without trailing zeros. */
export function rfc(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d*?)0*Z$/, (_, f: string) => (f ? `.${f}Z` : 'Z'));
}

/** A timespan as Go prints it, for the durations used here (under an hour). */
export function goDuration(ns: number): string {
  if (ns === 0) return '0s';
  if (ns < 1e3) return `${ns}ns`;
  const frac = (v: number, unit: number, digits: number, suffix: string) => {
    const whole = Math.floor(v / unit);
    const rest = v % unit;
    return rest ? `${whole}.${String(rest).padStart(digits, '0').replace(/0+$/, '')}${suffix}` : `${whole}${suffix}`;
  };
  if (ns < 1e6) return frac(ns, 1e3, 3, 'µs');
  if (ns < 1e9) return frac(ns, 1e6, 6, 'ms');
  const m = Math.floor(ns / 6e10);
  return `${m ? `${m}m` : ''}${frac(ns % 6e10, 1e9, 9, 's')}`;
}

const groupBy = <T>(xs: T[], key: (x: T) => string) => {
  const m = new Map<string, T[]>();
  for (const x of xs) m.set(key(x), [...(m.get(key(x)) ?? []), x]);
  return [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
};
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const mean = (xs: number[]) => sum(xs) / xs.length;
const variance = (xs: number[]) => sum(xs.map((x) => (x - mean(xs)) ** 2)) / (xs.length - 1);
/** Nearest rank, as Ferry's percentiles are exact: the value at ceil(p/100 · n). */
const nearestRank = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * xs.length) - 1)]!;
const sha = (alg: string, s: string) => createHash(alg).update(s).digest('hex');

export function coverageCases(d: Data): Case[] {
  const E = d.http[4]!;
  const S = d.traces[5]!;
  const t0 = Date.parse(E._time);
  const one = (feature: string, expr: string, want: unknown): Case => ({
    feature,
    apl: `${H} | where id == '${E.id}' | project v = ${expr}`,
    want,
  });
  const span = (feature: string, expr: string, want: unknown): Case => ({
    feature,
    apl: `${T} | where span_id == '${S.span_id}' | project v = ${expr}`,
    want,
  });
  const col = (feature: string, apl: string, want: unknown[], lags = false): Case => ({ feature, apl, want, read: 'column', lags });
  const byMethod = groupBy(d.http, (e) => e.method);
  const methods = byMethod.map(([m]) => m);
  const per = (f: (es: HttpEvent[]) => unknown) => byMethod.map(([, es]) => f(es));
  const dur = (es: HttpEvent[]) => es.map((e) => e.req_duration_ms);
  const count = (pred: (e: HttpEvent) => boolean) => d.http.filter(pred).length;
  const n500 = count((e) => e.status === '500');
  const city = E.geo.city;
  const D = E.req_duration_ms;
  const B = E.resp_body_size_bytes;
  const Hd = E.resp_header_size_bytes;
  const date = new Date(t0);
  const dayStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
  const parts = E.uri.split('/');

  return [
    // ---- tabular operators (apl.md 2.1)
    col('where', `${H} | where status == '500' | count`, [n500]),
    col('summarize', `${H} | summarize count() by method | order by method asc | project count_`, per((es) => es.length)),
    col('extend', `${H} | where id == '${E.id}' | extend kb = resp_body_size_bytes / 1000.0 | project kb`, [B / 1000]),
    col('project', `${H} | where id == '${E.id}' | project uri, method`, [E.uri]),
    col('sort', `${H} | sort by req_duration_ms desc | take 3 | project req_duration_ms`, dur(d.http).sort((a, b) => b - a).slice(0, 3)),
    col('order', `${H} | order by req_duration_ms asc | take 2 | project req_duration_ms`, dur(d.http).sort((a, b) => a - b).slice(0, 2)),
    col('take', `${H} | take 7 | count`, [7]),
    col('limit', `${H} | limit 9 | count`, [9]),
    col('top', `${H} | top 2 by resp_body_size_bytes | project resp_body_size_bytes`, d.http.map((e) => e.resp_body_size_bytes).sort((a, b) => b - a).slice(0, 2)),
    col('count', `${H} | where method == 'GET' | count`, [count((e) => e.method === 'GET')]),
    col('distinct', `${H} | distinct method | order by method asc`, methods),
    col('project-away', `${H} | where id == '${E.id}' | project-away ['geo.']*, id | getschema | where ColumnName startswith 'geo' or ColumnName == 'id' | count`, [0], true),
    col('project-keep', `${H} | where id == '${E.id}' | project-keep server_*`, [E.server_datacenter]),
    col('project-rename', `${H} | where id == '${E.id}' | project-rename verb = method | project verb`, [E.method]),
    col('project-reorder', `${H} | where id == '${E.id}' | project method, status | project-reorder status`, [E.status]),
    col('search', `${H} | search 'Firefox' | count`, [count((e) => e.user_agent.includes('Firefox'))]),
    col('union', `union ${H}, ${T} | count`, [d.http.length + d.traces.length]),
    col('join', `${H} | where id == '${E.id}' | join kind=inner (${H} | where id == '${E.id}' | project id, size = resp_body_size_bytes) on id | project size`, [B]),
    col('lookup', `${H} | where id == '${E.id}' | lookup (datatable(method:string, kind:string)['GET', 'read', 'POST', 'write', 'PUT', 'write', 'DELETE', 'write']) on method | project kind`, [E.method === 'GET' ? 'read' : 'write']),
    col('mv-expand', `${T} | where span_id == '${S.span_id}' | mv-expand events | count`, [S.events.length]),
    col('parse', `${H} | where id == '${E.id}' | parse uri with '/api/' version '/' area '/' * | project area`, [parts[3]]),
    col('parse-where', `${H} | parse-where uri with '/api/v2/' rest | count`, [count((e) => e.uri.startsWith('/api/v2/'))]),
    col('make-series', `${H} | make-series n = count() on _time from datetime(2024-05-06) to datetime(2024-05-06T06:00:00Z) step 1h | project total = series_sum(n)`, [count((e) => Date.parse(e._time) < Date.UTC(2024, 4, 6, 6))]),
    col('getschema', `${H} | getschema | where ColumnName == 'req_duration_ms' | project ColumnType`, ['real']),
    col('sample', `${H} | sample 0.9999 | summarize c = count() | project ok = c > 0`, [true], true),
    col('parse-kv', `${H} | where id == '${E.id}' | extend kv = strcat('code=', status, ';verb=', method) | parse-kv kv as (code, verb) with (pair_delimiter=';', kv_delimiter='=') | project verb`, [E.method], true),
    col('redact', `${H} | where id == '${E.id}' | redact replaceToken='#' @'[0-9]' on uri | project uri`, [E.uri.replace(/[0-9]/g, '#')], true),
    col('extend-valid', `${H} | where id == '${E.id}' | extend-valid msg = message | project isnotempty(msg)`, [E.message !== undefined], true),
    { feature: 'externaldata', apl: "externaldata (a:string) ['https://example.com/a.csv'] with (format='csv')", want: 'refused', lags: true },

    // ---- aggregation functions (apl.md 2.2)
    col('count', `${H} | summarize count() by method | order by method asc | project count_`, per((es) => es.length)),
    col('countif', `${H} | summarize countif(status == '500') by method | order by method asc | project countif_`, per((es) => es.filter((e) => e.status === '500').length)),
    col('sum', `${H} | summarize sum(resp_body_size_bytes) by method | order by method asc | project sum_resp_body_size_bytes`, per((es) => sum(es.map((e) => e.resp_body_size_bytes)))),
    col('avg', `${H} | summarize avg(req_duration_ms) by method | order by method asc | project avg_req_duration_ms`, per((es) => mean(dur(es)))),
    col('min', `${H} | summarize min(req_duration_ms)`, [Math.min(...dur(d.http))]),
    col('max', `${H} | summarize max(resp_header_size_bytes)`, [Math.max(...d.http.map((e) => e.resp_header_size_bytes))]),
    col('dcount', `${H} | summarize dcount(uri)`, [new Set(d.http.map((e) => e.uri)).size]),
    col('percentile', `${H} | summarize percentile(resp_body_size_bytes, 90)`, [nearestRank(d.http.map((e) => e.resp_body_size_bytes), 90)]),
    col('percentiles_array', `${H} | summarize percentiles_array(resp_body_size_bytes, 50, 99)`, [[50, 99].map((p) => nearestRank(d.http.map((e) => e.resp_body_size_bytes), p))]),
    col('arg_max', `${H} | summarize arg_max(req_duration_ms, slowest = uri) | project slowest`, [d.http.reduce((a, b) => (b.req_duration_ms > a.req_duration_ms ? b : a)).uri]),
    col('arg_min', `${H} | summarize arg_min(req_duration_ms, id) | project id`, [d.http.reduce((a, b) => (b.req_duration_ms < a.req_duration_ms ? b : a)).id]),
    col('make_list', `${H} | where method == 'DELETE' | summarize l = make_list(resp_header_size_bytes) | project array_length(l)`, [count((e) => e.method === 'DELETE')]),
    col('make_set', `${H} | summarize s = make_set(server_datacenter) | project array_length(s)`, [new Set(d.http.map((e) => e.server_datacenter)).size]),
    col('topk', `${H} | summarize topk(method, 1) | project tostring(topk_method[0].key)`, [[...byMethod].sort((a, b) => b[1].length - a[1].length)[0]![0]]),
    col('histogram', `${H} | summarize h = histogram(resp_header_size_bytes, 4) | project toint(h[0].count) + toint(h[1].count) + toint(h[2].count) + toint(h[3].count)`, [d.http.length]),
    col('rate', `${H} | where _time < datetime(2024-05-06T01:00:00Z) | summarize rate(resp_header_size_bytes, 1h) by bin(_time, 1h) | project rate_resp_header_size_bytes`, [sum(d.http.filter((e) => Date.parse(e._time) < Date.UTC(2024, 4, 6, 1)).map((e) => e.resp_header_size_bytes))]),
    col('sumif', `${H} | summarize sumif(resp_body_size_bytes, is_tls)`, [sum(d.http.filter((e) => e.is_tls).map((e) => e.resp_body_size_bytes))]),
    col('avgif', `${H} | summarize avgif(req_duration_ms, method == 'GET')`, [mean(dur(d.http.filter((e) => e.method === 'GET')))]),
    col('minif', `${H} | summarize minif(req_duration_ms, status == '500')`, [Math.min(...dur(d.http.filter((e) => e.status === '500')))]),
    col('maxif', `${H} | summarize maxif(req_duration_ms, status == '500')`, [Math.max(...dur(d.http.filter((e) => e.status === '500')))]),
    col('dcountif', `${H} | summarize dcountif(uri, method == 'GET')`, [new Set(d.http.filter((e) => e.method === 'GET').map((e) => e.uri)).size]),
    col('stdev', `${H} | summarize stdev(req_duration_ms)`, [Math.sqrt(variance(dur(d.http)))]),
    col('variance', `${H} | summarize variance(req_duration_ms)`, [variance(dur(d.http))]),
    col('percentileif', `${H} | summarize percentileif(resp_body_size_bytes, 50, is_tls)`, [nearestRank(d.http.filter((e) => e.is_tls).map((e) => e.resp_body_size_bytes), 50)], true),
    col('make_list_if', `${H} | summarize l = make_list_if(uri, status == '503') | project array_length(l)`, [count((e) => e.status === '503')]),
    col('make_set_if', `${H} | summarize s = make_set_if(uri, status == '404') | project array_length(s)`, [new Set(d.http.filter((e) => e.status === '404').map((e) => e.uri)).size]),
    col('topkif', `${H} | summarize t = topkif(server_datacenter, 1, is_tls) | project toint(t[0].count)`, [Math.max(...groupBy(d.http.filter((e) => e.is_tls), (e) => e.server_datacenter).map(([, es]) => es.length))]),
    col('histogramif', `${H} | summarize h = histogramif(resp_header_size_bytes, 2, is_tls) | project toint(h[0].count) + toint(h[1].count)`, [count((e) => e.is_tls)]),
    col('percentiles_arrayif', `${H} | summarize p = percentiles_arrayif(resp_body_size_bytes, dynamic([50]), is_tls) | project toint(p[0])`, [nearestRank(d.http.filter((e) => e.is_tls).map((e) => e.resp_body_size_bytes), 50)]),
    col('stdevif', `${H} | summarize stdevif(req_duration_ms, is_tls)`, [Math.sqrt(variance(dur(d.http.filter((e) => e.is_tls))))]),
    col('varianceif', `${H} | summarize varianceif(req_duration_ms, is_tls)`, [variance(dur(d.http.filter((e) => e.is_tls)))]),
    col(
      'spotlight',
      `${H} | summarize s = spotlight(status == '500', method) | mv-expand d = s.differences | where tostring(d.value) == 'GET' | project todouble(d.delta_score)`,
      [Math.round((count((e) => e.status === '500' && e.method === 'GET') / n500 - count((e) => e.status !== '500' && e.method === 'GET') / (d.http.length - n500)) * 1e6) / 1e6],
      true,
    ),
    col(
      'phrases',
      `${H} | summarize p = phrases(message, 3) | mv-expand p | project tostring(p.phrase)`,
      // Every message is the same sentence: its four-word sequences tie, so they come alphabetically.
      ['not solvable in linear', 'permutations were not solvable', 'qcd permutations were not'],
      true,
    ),

    // ---- scalar operators (apl.md 2.4)
    one('+', 'resp_body_size_bytes + resp_header_size_bytes', B + Hd),
    one('-', 'resp_body_size_bytes - resp_header_size_bytes', B - Hd),
    one('*', 'resp_header_size_bytes * 2', Hd * 2),
    one('/', 'resp_body_size_bytes / 2.0', B / 2),
    one('%', 'resp_body_size_bytes % 7', B % 7),
    one('==', `method == '${E.method}'`, true),
    one('!=', `status != '${E.status}'`, false),
    one('<>', `status <> '${E.status}'`, false),
    one('<', 'req_duration_ms < 1000', true),
    one('<=', 'resp_header_size_bytes <= 100', true),
    one('>', 'resp_body_size_bytes > 5000', false),
    one('>=', 'resp_body_size_bytes >= 1000', true),
    one('and', 'is_tls and true', E.is_tls),
    one('or', 'is_tls or true', true),
    one('not', 'not(is_tls)', !E.is_tls),
    one('=~', `method =~ '${E.method.toLowerCase()}'`, true),
    one('!~', `method !~ '${E.method.toLowerCase()}'`, false),
    one('contains', "uri contains 'API'", true),
    one('!contains', "uri !contains 'API'", false),
    one('startswith', "uri startswith '/API'", true),
    one('endswith', `uri endswith '${parts[parts.length - 1]!.toUpperCase()}'`, true),
    one('has', "uri has 'v1'", E.uri.includes('/v1/')),
    one('!has', "uri !has 'v1'", !E.uri.includes('/v1/')),
    one('in', `method in ('GET', 'POST')`, ['GET', 'POST'].includes(E.method)),
    one('!in', `method !in ('GET', 'POST')`, !['GET', 'POST'].includes(E.method)),
    one('matches regex', "uri matches regex '^/api/v[0-9]/'", true),
    one('between', 'resp_header_size_bytes between (20 .. 89)', true),
    one('contains_cs', "uri contains_cs 'API'", false),
    one('startswith_cs', "uri startswith_cs '/api'", true),
    one('endswith_cs', `uri endswith_cs '${parts[parts.length - 1]}'`, true),
    one('has_cs', "uri has_cs 'V1'", false),
    one('!startswith', "uri !startswith '/api'", false),
    one('!endswith', "uri !endswith 'zzz'", true),
    one('!matches regex', "uri !matches regex '^/api'", false),
    one('!between', 'resp_header_size_bytes !between (20 .. 89)', false),
    one('in~', `method in~ ('${E.method.toLowerCase()}')`, true),
    one('!in~', `method !in~ ('${E.method.toLowerCase()}')`, false),
    one('has_any', "uri has_any ('v1', 'v2')", true),
    one('hasprefix', "uri hasprefix 'ap'", true),
    one('hassuffix', `uri hassuffix '${parts[parts.length - 1]!.slice(1)}'`, true),
    one('!contains_cs', "uri !contains_cs 'API'", true),
    one('!startswith_cs', "uri !startswith_cs '/API'", true),
    one('!endswith_cs', "uri !endswith_cs 'ZZZ'", true),
    one('!has_cs', "uri !has_cs 'api'", false),
    { ...one('has_any_cs', "uri has_any_cs ('API', 'V9')", false), lags: true },
    one('hasprefix_cs', "uri hasprefix_cs 'ap'", true),
    one('hassuffix_cs', "uri hassuffix_cs 'API'", false),
    one('!hasprefix', "uri !hasprefix 'ap'", false),
    one('!hasprefix_cs', "uri !hasprefix_cs 'AP'", true),
    one('!hassuffix', "uri !hassuffix 'zz'", true),
    one('!hassuffix_cs', "uri !hassuffix_cs 'zz'", true),

    // ---- rounding and conditional functions
    one('bin', 'bin(resp_body_size_bytes, 100)', B - (B % 100)),
    col('bin_auto', `${H} | summarize count() by bin_auto(_time) | summarize sum(count_)`, [d.http.length]),
    one('ceiling', 'ceiling(req_duration_ms)', Math.ceil(D)),
    one('floor', 'floor(req_duration_ms)', Math.floor(D)),
    one('iff', "iff(is_tls, 'secure', 'plain')", E.is_tls ? 'secure' : 'plain'),
    one('case', "case(resp_body_size_bytes < 2000, 'small', resp_body_size_bytes < 4000, 'medium', 'large')", B < 2000 ? 'small' : B < 4000 ? 'medium' : 'large'),

    // ---- conversion functions
    one('tostring', 'tostring(resp_body_size_bytes)', String(B)),
    one('toint', 'toint(status)', Number(E.status)),
    one('toreal', 'toreal(status)', Number(E.status)),
    one('todouble', 'todouble(resp_header_size_bytes)', Hd),
    one('tolong', 'tolong(status)', Number(E.status)),
    one('tobool', "tobool('true')", true),
    one('todatetime', "todatetime('2024-05-06T07:08:09Z')", '2024-05-06T07:08:09Z'),
    one('todynamic', "todynamic('{\"a\": 1}')", { a: 1 }),
    one('totimespan', "totimespan('1.5s')", '1.5s'),
    one('dynamic_to_json', "dynamic_to_json(pack_dictionary('method', method, 'code', status))", JSON.stringify({ code: E.status, method: E.method })),
    one('ensure_field', "ensure_field('server_datacenter', typeof(string))", E.server_datacenter),
    one('isbool', 'isbool(is_tls)', true),
    one('toarray', 'toarray(resp_header_size_bytes)', [Hd]),
    one('tohex', 'tohex(resp_body_size_bytes)', B.toString(16)),

    // ---- string functions
    one('isempty', 'isempty(message)', E.message === undefined),
    one('isnotempty', 'isnotempty(uri)', true),
    one('strcat', "strcat(method, ' ', uri)", `${E.method} ${E.uri}`),
    one('isnotnull', 'isnotnull(status)', true),
    one('substring', 'substring(uri, 1, 3)', E.uri.slice(1, 4)),
    one('coalesce', "coalesce(message, 'none')", E.message ?? 'none'),
    one('strlen', "strlen(['geo.city'])", [...city].length),
    one('tolower', 'tolower(method)', E.method.toLowerCase()),
    one('isnull', 'isnull(resp_body_size_bytes)', false),
    one('toupper', 'toupper(uri)', E.uri.toUpperCase()),
    one('extract', "extract('/api/(v[0-9])/', 1, uri)", /\/api\/(v[0-9])\//.exec(E.uri)![1]),
    one('parse_json', "parse_json('{\"code\": 200}')", { code: 200 }),
    one('split', "split(uri, '/')", parts),
    one('indexof', "indexof(uri, 'v')", E.uri.indexOf('v')),
    one('trim', "trim('/', uri)", E.uri.replace(/^\/+|\/+$/g, '')),
    one('replace', "replace('v([0-9])', 'version$1', uri)", E.uri.replace(/v([0-9])/g, 'version$1')),
    one('replace_string', "replace_string('/api/', '/API/', uri)", E.uri.replace('/api/', '/API/')),
    one('trim_end', "trim_end('og', uri)", E.uri.replace(/[og]+$/, '')),
    one('trim_start', "trim_start('/', uri)", E.uri.replace(/^\/+/, '')),
    one('countof', "countof('/', uri)", parts.length - 1),
    one('extract_all', "extract_all('([a-z]+)', dynamic([1]), uri)", E.uri.match(/[a-z]+/g)),
    one('gettype', 'gettype(req_duration_ms)', 'real'),
    one('parse_url', "parse_url(strcat('https://example.com', uri)).Path", E.uri),
    one('replace_regex', "replace_regex('[0-9]', '#', uri)", E.uri.replace(/[0-9]/g, '#')),
    one('strcat_delim', "strcat_delim('|', method, status)", `${E.method}|${E.status}`),
    one('reverse', 'reverse(method)', [...E.method].reverse().join('')),
    one('url_decode', "url_decode('a%20b')", 'a b'),
    one('base64_decode_tostring', `base64_decode_tostring('${Buffer.from(E.method).toString('base64')}')`, E.method),
    one('base64_encode_tostring', 'base64_encode_tostring(method)', Buffer.from(E.method).toString('base64')),
    one('format_bytes', 'format_bytes(resp_body_size_bytes)', B < 1024 ? `${B} Bytes` : `${Math.round(B / 1024)} KB`),
    one('trim_space', "trim_space(strcat('  ', method, ' '))", E.method),
    one('url_encode', "url_encode(strcat(method, ' ', status))", `${E.method}%20${E.status}`),
    one('base64_decode_toarray', `base64_decode_toarray('${Buffer.from(E.method).toString('base64')}')`, [...Buffer.from(E.method)]),
    one('base64_encode_fromarray', `base64_encode_fromarray(dynamic([${[...Buffer.from(E.method)].join(', ')}]))`, Buffer.from(E.method).toString('base64')),
    one('countof_regex', "countof_regex('[0-9]', uri)", (E.uri.match(/[0-9]/g) ?? []).length),
    one('format_url', "format_url(pack_dictionary('scheme', 'https', 'host', 'example.com', 'path', uri))", `https://example.com${E.uri}`),
    one('indexof_regex', "indexof_regex(uri, 'v[0-9]')", E.uri.search(/v[0-9]/)),
    one('isascii', "isascii(['geo.city'])", /^[\x00-\x7f]*$/.test(city)),
    one('parse_bytes', "parse_bytes('2 KB')", 2048),
    one('parse_csv', "parse_csv(strcat(method, ',', status))", [E.method, E.status]),
    one('parse_path', 'parse_path(uri).basename', parts[parts.length - 1]),
    one('parse_urlquery', "parse_urlquery(strcat('m=', method))", { m: E.method }),
    one('quote', 'quote(method)', JSON.stringify(E.method)),
    one('regex_quote', "regex_quote('1.5*')", '1\\.5\\*'),
    one('strcmp', "strcmp(method, 'GET')", E.method < 'GET' ? -1 : E.method > 'GET' ? 1 : 0),
    one('string_size', "string_size(['geo.city'])", Buffer.byteLength(city)),
    one('strip_ansi_escapes', 'strip_ansi_escapes(uri)', E.uri),
    one('strrep', "strrep(method, 2, '-')", `${E.method}-${E.method}`),
    one('totitle', 'totitle(tolower(method))', E.method[0] + E.method.slice(1).toLowerCase()),
    one('translate', "translate('/', '.', uri)", E.uri.replaceAll('/', '.')),
    one('trim_end_regex', "trim_end_regex('[a-z]+', uri)", E.uri.replace(/[a-z]+$/, '')),
    one('trim_regex', "trim_regex('/', uri)", E.uri.replace(/^\/+|\/+$/g, '')),
    one('trim_start_regex', "trim_start_regex('/api/', uri)", E.uri.replace(/^\/api\//, '')),
    one('unicode_codepoints_from_string', 'unicode_codepoints_from_string(method)', [...E.method].map((c) => c.codePointAt(0))),
    one('unicode_codepoints_to_string', 'unicode_codepoints_to_string(unicode_codepoints_from_string(method))', E.method),

    // ---- datetime functions
    col('ago', `${H} | where _time > ago(36500d) | count`, [d.http.length]),
    col('now', `${H} | where _time < now() | count`, [d.http.length]),
    one('datetime_part', "datetime_part('hour', _time)", date.getUTCHours()),
    one('datetime_diff', "datetime_diff('minute', _time, datetime(2024-05-06))", Math.floor((t0 - Date.UTC(2024, 4, 6)) / 60_000)),
    one('hourofday', 'hourofday(_time)', date.getUTCHours()),
    one('startofday', 'startofday(_time)', rfc(dayStart)),
    one('datetime_add', "datetime_add('day', 1, _time)", rfc(t0 + 86_400_000)),
    one('getmonth', 'getmonth(_time)', 5),
    one('getyear', 'getyear(_time)', 2024),
    one('dayofweek', 'dayofweek(_time)', date.getUTCDay()),
    one('unixtime_seconds_todatetime', 'unixtime_seconds_todatetime(1715000000)', rfc(1715000000000)),
    one('dayofmonth', 'dayofmonth(_time)', date.getUTCDate()),
    one('endofday', 'endofday(_time)', '2024-05-06T23:59:59.999999999Z'),
    one('startofmonth', 'startofmonth(_time)', '2024-05-01T00:00:00Z'),
    one('startofweek', 'startofweek(_time)', rfc(dayStart - date.getUTCDay() * 86_400_000)),
    one('startofyear', 'startofyear(_time)', '2024-01-01T00:00:00Z'),
    one('unixtime_milliseconds_todatetime', 'unixtime_milliseconds_todatetime(1715000000123)', rfc(1715000000123)),
    one('dayofyear', 'dayofyear(_time)', 127),
    one('endofmonth', 'endofmonth(_time)', '2024-05-31T23:59:59.999999999Z'),
    one('endofweek', 'endofweek(_time)', `${new Date(dayStart + (6 - date.getUTCDay()) * 86_400_000).toISOString().slice(0, 10)}T23:59:59.999999999Z`),
    one('endofyear', 'endofyear(_time)', '2024-12-31T23:59:59.999999999Z'),
    one('monthofyear', 'monthofyear(_time)', 5),
    one('unixtime_microseconds_todatetime', 'unixtime_microseconds_todatetime(1715000000123456)', '2024-05-06T12:53:20.123456Z'),
    one('unixtime_nanoseconds_todatetime', 'unixtime_nanoseconds_todatetime(1715000000123456789)', '2024-05-06T12:53:20.123456789Z'),
    one('week_of_year', "week_of_year(datetime(2024-05-06))", 19),

    // ---- mathematical functions
    one('round', 'round(req_duration_ms, 1)', Math.round(D * 10) / 10),
    one('log', 'log(resp_body_size_bytes)', Math.log(B)),
    one('pow', 'pow(resp_header_size_bytes, 2)', Hd ** 2),
    one('abs', 'abs(resp_header_size_bytes - 100)', Math.abs(Hd - 100)),
    one('log10', 'log10(resp_body_size_bytes)', Math.log10(B)),
    one('sqrt', 'sqrt(resp_body_size_bytes)', Math.sqrt(B)),
    one('isnan', 'isnan(req_duration_ms)', false),
    one('max_of', 'max_of(resp_header_size_bytes, 50)', Math.max(Hd, 50)),
    one('min_of', 'min_of(resp_header_size_bytes, 50)', Math.min(Hd, 50)),
    one('acos', 'acos(req_duration_ms / 10)', Math.acos(D / 10)),
    one('asin', 'asin(req_duration_ms / 10)', Math.asin(D / 10)),
    one('atan', 'atan(req_duration_ms)', Math.atan(D)),
    one('atan2', 'atan2(resp_header_size_bytes, resp_body_size_bytes)', Math.atan2(Hd, B)),
    one('cos', 'cos(req_duration_ms)', Math.cos(D)),
    one('cot', 'cot(req_duration_ms)', 1 / Math.tan(D)),
    one('degrees', 'degrees(req_duration_ms)', (D * 180) / Math.PI),
    one('exp', 'exp(req_duration_ms)', Math.exp(D)),
    one('exp10', 'exp10(req_duration_ms)', 10 ** D),
    one('exp2', 'exp2(req_duration_ms)', 2 ** D),
    one('gamma', 'gamma(5)', 24),
    one('isfinite', 'isfinite(req_duration_ms)', true),
    one('isinf', 'isinf(req_duration_ms)', false),
    one('isint', 'isint(resp_body_size_bytes)', true),
    one('log2', 'log2(resp_body_size_bytes)', Math.log2(B)),
    one('loggamma', 'loggamma(5)', Math.log(24)),
    one('pi', 'pi()', Math.PI),
    one('radians', 'radians(resp_header_size_bytes)', (Hd * Math.PI) / 180),
    col('rand', `${H} | extend r = rand() | summarize ok = countif(r >= 0 and r < 1) == count()`, [true]),
    one('range', 'range(1, 3)', [1, 2, 3]),
    one('set_difference', "set_difference(split(uri, '/'), dynamic(['', 'api']))", [...new Set(parts.filter((p) => p !== '' && p !== 'api'))]),
    one('set_has_element', "set_has_element(split(uri, '/'), 'api')", true),
    one('set_intersect', "set_intersect(split(uri, '/'), dynamic(['api', 'v1', 'v2']))", [...new Set(parts.filter((p) => ['api', 'v1', 'v2'].includes(p)))]),
    one('set_union', "set_union(dynamic(['api']), split(uri, '/'))", [...new Set(['api', ...parts])]),
    one('sign', 'sign(resp_header_size_bytes - 100)', -1),
    one('sin', 'sin(req_duration_ms)', Math.sin(D)),
    one('tan', 'tan(req_duration_ms)', Math.tan(D)),

    // ---- array functions
    one('array_length', "array_length(split(uri, '/'))", parts.length),
    one('pack_array', 'pack_array(method, status)', [E.method, E.status]),
    one('bag_pack', 'bag_pack("m", method)', { m: E.method }),
    one('array_concat', "array_concat(split(uri, '/'), pack_array(method))", [...parts, E.method]),
    one('array_index_of', "array_index_of(split(uri, '/'), 'api')", 1),
    one('array_slice', "array_slice(split(uri, '/'), 1, 2)", parts.slice(1, 3)),
    one('array_sum', 'array_sum(pack_array(resp_body_size_bytes, resp_header_size_bytes))', B + Hd),
    one('len', "len(split(uri, '/'))", parts.length),
    one('pack_dictionary', 'pack_dictionary("s", status)', { s: E.status }),
    one('bag_keys', 'bag_keys(pack_dictionary("a", 1, "b", 2))', ['a', 'b']),
    one('array_extract', "array_extract(pack_array(bag_pack('v', method)), '$[*].v')", [E.method]),
    one('array_iff', 'array_iff(dynamic([true, false]), pack_array(method, method), pack_array(status, status))', [E.method, E.status]),
    one('array_reverse', "array_reverse(split(uri, '/'))", [...parts].reverse()),
    one('array_rotate_left', "array_rotate_left(split(uri, '/'), 1)", [...parts.slice(1), parts[0]]),
    one('array_rotate_right', "array_rotate_right(split(uri, '/'), 1)", [parts[parts.length - 1], ...parts.slice(0, -1)]),
    one('array_select_dict', "array_select_dict(pack_array(bag_pack('k', 'a'), bag_pack('k', method)), 'k', method)", { k: E.method }),
    one('array_shift_left', "array_shift_left(split(uri, '/'), 1)", [...parts.slice(1), null]),
    one('array_shift_right', "array_shift_right(split(uri, '/'), 1)", [null, ...parts.slice(0, -1)]),
    one('array_sort_asc', "array_sort_asc(split(uri, '/'))", [...parts].sort()),
    one('array_sort_desc', "array_sort_desc(split(uri, '/'))", [...parts].sort().reverse()),
    one('array_split', "array_split(split(uri, '/'), 2)", [parts.slice(0, 2), parts.slice(2)]),
    one('bag_has_key', 'bag_has_key(pack_dictionary("m", method), "m")', true),
    one('bag_zip', "bag_zip(dynamic(['m', 's']), pack_array(method, status))", { m: E.method, s: E.status }),
    one('isarray', "isarray(split(uri, '/'))", true),
    one('strcat_array', "strcat_array(split(uri, '/'), '|')", parts.join('|')),

    // ---- hash functions
    one('hash_md5', 'hash_md5(uri)', sha('md5', E.uri)),
    one('hash_sha256', 'hash_sha256(uri)', sha('sha256', E.uri)),
    col('hash', `${H} | summarize d = dcount(hash(id)), n = dcount(id) | project d == n`, [true]),
    one('hash_sha1', 'hash_sha1(uri)', sha('sha1', E.uri)),
    one('hash_sha512', 'hash_sha512(uri)', sha('sha512', E.uri)),

    // ---- IP functions
    one('geo_info_from_ip_address', "geo_info_from_ip_address('172.217.22.14').country_iso", 'US'),
    one('ipv4_is_in_range', "ipv4_is_in_range('10.1.2.3', '10.0.0.0/8')", true),
    one('ipv4_is_private', "ipv4_is_private('192.168.1.7')", true),
    one('parse_ipv4', "parse_ipv4('10.1.2.3')", 167838211),
    one('format_ipv4', 'format_ipv4(167838211)', '10.1.2.3'),
    one('format_ipv4_mask', "format_ipv4_mask('10.1.2.3', 16)", '10.1.0.0/16'),
    one('has_any_ipv4', "has_any_ipv4('from 10.1.2.3 to 8.8.8.8', dynamic(['8.8.8.8']))", true),
    one('has_any_ipv4_prefix', "has_any_ipv4_prefix('from 10.1.2.3', dynamic(['10.1.']))", true),
    one('has_ipv4', "has_ipv4('from 10.1.2.3 to', '10.1.2.3')", true),
    one('has_ipv4_prefix', "has_ipv4_prefix('from 10.1.2.3 to', '10.1.')", true),
    one('ipv4_compare', "ipv4_compare('10.1.2.3', '10.1.2.4')", -1),
    one('ipv4_is_in_any_range', "ipv4_is_in_any_range('10.1.2.3', dynamic(['192.168.0.0/16', '10.0.0.0/8']))", true),
    one('ipv4_is_match', "ipv4_is_match('10.1.2.3', '10.1.2.200', 24)", true),
    one('ipv4_netmask_suffix', "ipv4_netmask_suffix('10.1.2.3/20')", 20),
    one('ipv6_compare', "ipv6_compare('::ffff:10.1.2.3', '10.1.2.3')", 0),
    one('ipv6_is_in_any_range', "ipv6_is_in_any_range('2001:db8::1', dynamic(['2001:db8::/32']))", true),
    one('ipv6_is_in_range', "ipv6_is_in_range('2001:db8::1', '2001:db8::/32')", true),
    one('ipv6_is_match', "ipv6_is_match('2001:db8::1', '2001:db8::2', 120)", true),
    one('parse_ipv4_mask', "parse_ipv4_mask('10.1.2.3', 24)", 167838208),

    // ---- metadata, type, pair and SQL functions
    one('column_ifexists', "column_ifexists('server_datacenter', 'none')", E.server_datacenter),
    col('cursor_current', `${H} | where id == '${E.id}' | extend c = cursor_current() | project isnotempty(c)`, [true]),
    col('ingestion_time', `${H} | where id == '${E.id}' | project ingestion_time() == _sysTime`, [true]),
    one('iscc', "iscc('4111 1111 1111 1111')", true),
    one('isimei', "isimei('490154203237518')", true),
    one('ismap', 'ismap(bag_pack("m", method))', true),
    one('isreal', 'isreal(req_duration_ms)', true),
    one('isstring', 'isstring(uri)', true),
    one('isutf8', "isutf8(['geo.city'])", true),
    one('find_pair', "find_pair(pack_array(strcat('method:', method)), 'method', '*').value", E.method),
    one('pair', "pair('method', method)", `method:${E.method}`),
    one('parse_pair', "parse_pair(strcat('method=', method), '=').value", E.method),
    one('format_sql', "format_sql(parse_sql('select 1'))", 'refused'),
    one('parse_sql', "parse_sql('select 1')", 'refused'),

    // ---- time-series functions, over a span's numbers and make-series output
    span('series_abs', 'series_abs(pack_array(-duration, duration))', [S.duration, S.duration]),
    span('series_acos', 'series_acos(pack_array(0.5))', [Math.acos(0.5)]),
    span('series_add', 'series_add(pack_array(duration), 1)', [S.duration + 1]),
    span('series_asin', 'series_asin(pack_array(0.5))', [Math.asin(0.5)]),
    span('series_atan', 'series_atan(pack_array(1))', [Math.PI / 4]),
    span('series_ceiling', 'series_ceiling(pack_array(duration / 1000000.0))', [Math.ceil(S.duration / 1e6)]),
    span('series_cos', 'series_cos(pack_array(0))', [1]),
    span('series_cosine_similarity', 'series_cosine_similarity(pack_array(duration, 0), pack_array(1, 0))', 1),
    span('series_divide', 'series_divide(pack_array(duration), 1000)', [S.duration / 1000]),
    span('series_dot_product', 'series_dot_product(pack_array(1, 2), pack_array(3, 4))', 11),
    span('series_equals', 'series_equals(pack_array(duration, 0), 0)', [false, true]),
    span('series_exp', 'series_exp(pack_array(0))', [1]),
    span('series_fft', 'series_fft(pack_array(1, 0, 0, 0))', [{ real: 1, imag: 0 }, { real: 1, imag: 0 }, { real: 1, imag: 0 }, { real: 1, imag: 0 }]),
    span('series_fill_backward', 'series_fill_backward(pack_array(long(null), duration))', [S.duration, S.duration]),
    span('series_fill_const', 'series_fill_const(pack_array(long(null), duration), 0)', [0, S.duration]),
    span('series_fill_forward', 'series_fill_forward(pack_array(duration, long(null)))', [S.duration, S.duration]),
    span('series_fill_linear', 'series_fill_linear(pack_array(0, long(null), duration))', [0, S.duration / 2, S.duration]),
    span('series_fir', 'series_fir(pack_array(duration, duration), dynamic([1, 1]), false)', [S.duration, 2 * S.duration]),
    span('series_floor', 'series_floor(pack_array(duration / 1000000.0))', [Math.floor(S.duration / 1e6)]),
    span('series_greater', 'series_greater(pack_array(duration, 0), 0)', [true, false]),
    span('series_greater_equals', 'series_greater_equals(pack_array(duration, 0), 0)', [true, true]),
    span('series_ifft', 'series_ifft(dynamic([4, 0, 0, 0]))', [{ real: 1, imag: 0 }, { real: 1, imag: 0 }, { real: 1, imag: 0 }, { real: 1, imag: 0 }]),
    span('series_iir', 'series_iir(pack_array(1, 1, 1), dynamic([1]), dynamic([1, -1]))', [1, 2, 3]),
    span('series_less', 'series_less(pack_array(duration, 0), 1)', [false, true]),
    span('series_less_equals', 'series_less_equals(pack_array(duration, 0), 0)', [false, true]),
    span('series_log', 'series_log(pack_array(duration))', [Math.log(S.duration)]),
    span('series_magnitude', 'series_magnitude(pack_array(3, 4))', 5),
    span('series_max', 'series_max(pack_array(duration, 0), pack_array(0, 7))', [S.duration, 7]),
    span('series_min', 'series_min(pack_array(duration, 0), pack_array(0, 7))', [0, 0]),
    span('series_multiply', 'series_multiply(pack_array(duration), 2)', [2 * S.duration]),
    span('series_not_equals', 'series_not_equals(pack_array(duration, 0), 0)', [true, false]),
    span('series_pearson_correlation', 'series_pearson_correlation(pack_array(1, 2, 3), pack_array(2, 4, 6))', 1),
    span('series_pow', 'series_pow(pack_array(3), 2)', [9]),
    span('series_sign', 'series_sign(pack_array(-duration, 0, duration))', [-1, 0, 1]),
    span('series_sin', 'series_sin(pack_array(0))', [0]),
    span('series_stats', 'series_stats(pack_array(1, duration)).max', S.duration),
    span('series_stats_dynamic', 'series_stats_dynamic(pack_array(1, duration)).min', 1),
    span('series_subtract', 'series_subtract(pack_array(duration), duration)', [0]),
    span('series_sum', 'series_sum(pack_array(duration, 1))', S.duration + 1),
    span('series_tan', 'series_tan(pack_array(0))', [0]),

    // ---- GenAI functions, over ai-logs
    ...genaiCases(d),
  ];
}

function genaiCases(d: Data): Case[] {
  const R = d.ai[2]!;
  const one = (feature: string, expr: string, want: unknown): Case => ({
    feature,
    apl: `${A} | where model == '${R.model}' | project v = ${expr}`,
    want,
  });
  const text = (m: { content: string }[]) => m.map((x) => x.content);
  return [
    one('genai_concat_contents', "genai_concat_contents(messages, ' ')", text(R.messages).join(' ')),
    one('genai_conversation_turns', 'genai_conversation_turns(messages)', 1),
    one('genai_cost', 'genai_cost(model, input_tokens, output_tokens)', (R.input_tokens * 15 + R.output_tokens * 75) / 1e6),
    one('genai_estimate_tokens', 'genai_estimate_tokens(genai_extract_user_prompt(messages))', Math.ceil(R.messages[1]!.content.length / 4)),
    one('genai_extract_assistant_response', 'genai_extract_assistant_response(messages)', R.messages[2]!.content),
    one('genai_extract_function_results', 'genai_extract_function_results(messages)', null),
    one('genai_extract_system_prompt', 'genai_extract_system_prompt(messages)', R.messages[0]!.content),
    one('genai_extract_tool_calls', 'genai_extract_tool_calls(messages)', null),
    one('genai_extract_user_prompt', 'genai_extract_user_prompt(messages)', R.messages[1]!.content),
    one('genai_get_content_by_index', 'genai_get_content_by_index(messages, 0)', R.messages[0]!.content),
    one('genai_get_content_by_role', "genai_get_content_by_role(messages, 'assistant')", R.messages[2]!.content),
    one('genai_get_pricing', 'genai_get_pricing(model)', { input_price_per_million: 15, output_price_per_million: 75 }),
    one('genai_get_role', 'genai_get_role(messages, 1)', 'user'),
    one('genai_has_tool_calls', 'genai_has_tool_calls(messages)', false),
    one('genai_input_cost', 'genai_input_cost(model, input_tokens)', (R.input_tokens * 15) / 1e6),
    one('genai_is_truncated', 'genai_is_truncated(messages, finish_reason)', R.finish_reason === 'length'),
    one('genai_message_roles', 'genai_message_roles(messages)', R.messages.map((m) => m.role)),
    one('genai_output_cost', 'genai_output_cost(model, output_tokens)', (R.output_tokens * 75) / 1e6),
  ];
}

