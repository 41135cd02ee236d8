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
  'status > dur',
  '500 <= status',
  'dur >= status',
  'sqrt(dur) < 1',
  'sqrt(dur) >= dur',
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
  // positions, regular expressions, quoting
  "indexof(msg, 'a', 2)",
  "indexof(msg, 'a', -5, 3)",
  "indexof(msg, '/', 0, -1, 2)",
  "indexof(msg, '', 3)",
  "indexof(msg, 'x', 100)",
  "indexof(msg, 'é', 1, 4, 1)",
  "indexof_regex(msg, '[aeiou]', 1, 2)",
  "indexof_regex(msg, @'\s', 0)",
  "indexof_regex(msg, 'a', -1)",
  "countof_regex(msg, '[a-z]')",
  "countof_regex(msg, 'a*')",
  'regex_quote(msg)',
  "trim_regex(@'\s', pad)",
  "trim_start_regex('[a-z]', msg)",
  "trim_end_regex(@'[a-z\.]', msg)",
  "translate('aeo', 'AE', msg)",
  "translate('/', '', msg)",
  'quote(msg)',
  'strip_ansi_escapes(strcat(unicode_codepoints_to_string(pack_array(27, 91, 51, 49, 109)), msg))',
  'unicode_codepoints_from_string(msg)',
  'unicode_codepoints_to_string(pack_array(72, 105, status, 55296, 0, 1.5))',
  'unicode_codepoints_to_string(tags)',
  'parse_path(msg)',
  "parse_path('https://h.example:8080/a/b/c.tar.gz?x=1#f')",
  "parse_path(strcat('C:\\\\dir\\\\', id, '.log'))",
  'parse_csv(strcat(msg, \',\', status, \',"q,""x"\'))',
  "parse_bytes(strcat(id, ' KB'))",
  "parse_bytes(strcat(dur, 'MiB'), 10)",
  'parse_bytes(msg)',
  'tohex(status)',
  'tohex(status, 8)',
  'tohex(-id)',
  'base64_decode_toarray(b64)',
  'base64_encode_fromarray(pack_array(id, 1, 255))',
  'base64_encode_fromarray(pack_array(id * 20))',
  "dynamic_to_json(bag_pack('region', attrs.region, 'n', attrs.n))",
  "dynamic_to_json(bag_pack('z', 1, 'a', tags))",
  "format_url(bag_pack('scheme', 'https', 'host', msg, 'port', status, 'path', 'p/q', 'query', bag_pack('a b', id), 'fragment', 'f'))",
  "format_url(parse_url(strcat('http://u:p@h:1/x?k=', id, '#z')))",
  "pair('k', msg)",
  "pair(msg, status, '=')",
  "parse_pair(msg, ' ')",
  'parse_pair(opt)',
  "find_pair(pack_array('a:1', 'b:2', msg), 'b*', '*')",
  "iscc(strcat('4111 1111 1111 11', id))",
  "isimei('490154203237518')",
  "replace(@'(\w+) /', '$1 -> ', msg)",
  // numbers, hashes, byte sizes
  'cot(dur)',
  'gamma(abs(status % 7) + 1)',
  'gamma(dur)',
  'loggamma(abs(status % 9) + 1)',
  'isint(dur)',
  'isint(status)',
  'isint(msg)',
  'isutf8(msg)',
  'isascii(msg)',
  'isascii(status)',
  'rand() < 1',
  'hash(msg)',
  'hash(status, 7)',
  'hash_xxhash64(msg)',
  'hash_xxhash64(id, 100)',
  'format_bytes(status * 1000)',
  'format_bytes(dur * 1000000, 2)',
  'format_bytes(-id * 100000000000, 1)',
  'format_bytes(2.5)',
  'format_bytes(0.25 * id, 1)',
  // IP addresses
  'parse_ipv4_mask(ip, 16)',
  'format_ipv4(ip)',
  'format_ipv4(ip, 8)',
  'format_ipv4_mask(ip, 24)',
  'format_ipv4_mask(ip)',
  "ipv4_is_in_any_range(ip, '10.0.0.0/8', '192.168.0.0/16')",
  "ipv4_is_in_any_range(ip, pack_array('172.16.0.0/12'))",
  "has_ipv4(strcat('from ', ip, ' to 8.8.8.8'), '8.8.8.8')",
  'has_ipv4(msg, ip)',
  "has_ipv4_prefix(strcat('src=', ip), '10.')",
  "has_ipv4_prefix(strcat('src=', ip), '172.16')",
  "has_any_ipv4(strcat('a ', ip), '10.0.0.0/8', '8.8.8.8')",
  "has_any_ipv4_prefix(strcat('a ', ip), pack_array('192.', '8.8.'))",
  "ipv6_compare(ip, '::ffff:10.1.2.3')",
  "ipv6_compare('fe80::1', 'fe80::2', 120)",
  "ipv6_is_match(ip, '::ffff:8.8.8.8')",
  "ipv6_is_in_range(strcat('2001:db8::', id), '2001:db8::/124')",
  "ipv6_is_in_any_range(ip, '::ffff:10.0.0.0/104', 'fe80::/10')",
  // more arrays and bags
  "array_sort_asc(pack_array(status, msg, dur, id, 'b'))",
  "array_sort_desc(pack_array(status, msg, dur, id, 'b'))",
  'array_sort_asc(tags, false)',
  'array_sort_desc(pack_array(dur, status), false)',
  'array_split(pack_array(1, 2, 3, 4, 5), 2)',
  'array_split(tags, pack_array(1, -1))',
  'array_rotate_left(tags, 1)',
  'array_rotate_right(pack_array(1, 2, 3, 4), id)',
  'array_shift_left(tags)',
  'array_shift_right(pack_array(1, 2, 3), 1, -1)',
  'array_shift_left(pack_array(1, 2, 3), id % 4, status)',
  "array_iff(pack_array(flag, true, false, 'x'), pack_array(1, 2, 3, 4), 0)",
  "array_select_dict(pack_array(bag_pack('a', 1), bag_pack('region', attrs.region, 'n', attrs.n), bag_pack('region', 'us')), 'region', 'us')",
  'bag_zip(tags, pack_array(1, status))',
  'range(1, toint(status) % 10)',
  'range(0, todouble(dur), 0.5)',
  'range(10, 1, -3)',
  'toarray(status)',
  'toarray(tags)',
  "toarray(bag_pack('region', attrs.region, 'n', attrs.n))",
  "pack_dictionary('k', msg)",
  "array_extract(pack_array(bag_pack('region', attrs.region, 'n', attrs.n), bag_pack('region', attrs.region, 'n', attrs.n)), '$[*].region')",
  "array_extract(bag_pack('region', attrs.region, 'n', attrs.n), '$.n')",
  "array_extract(tags, '$[#-1]')",
  // series
  'series_abs(pack_array(status, dur, -id))',
  'series_log(pack_array(dur, id, 0))',
  'series_asin(pack_array(dur, 0.5))',
  'series_add(pack_array(status, dur), pack_array(id, 1, 2))',
  'series_multiply(pack_array(id, dur), 2)',
  'series_divide(pack_array(id, 1), pack_array(0, status))',
  'series_subtract(10, pack_array(id, dur))',
  'series_pow(pack_array(id, 2), 0.5)',
  'series_max(pack_array(status, dur), pack_array(id, 100))',
  'series_greater(pack_array(status, dur, id), 100)',
  'series_equals(pack_array(id, 3), pack_array(3, id))',
  'series_sum(pack_array(status, dur, id))',
  'series_magnitude(pack_array(3, id))',
  'series_dot_product(pack_array(1, 2, id), pack_array(id, dur))',
  'series_cosine_similarity(pack_array(1, 2, id), pack_array(id, 3, 1))',
  'series_pearson_correlation(pack_array(1, 2, id, 4), pack_array(id, 3, 1, 9))',
  'series_stats(pack_array(status, 4, id, 1))',
  'series_fir(pack_array(id, 2, 3, 4), pack_array(1, 1))',
  'series_fill_forward(pack_array(id, status, 3))',
  'series_fill_linear(pack_array(1, status, dur, 9))',
  "series_abs(pack_array('2', flag, 'x'))",
  // GenAI conversations
  "genai_concat_contents(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))), ' | ')",
  "genai_conversation_turns(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))))",
  'genai_estimate_tokens(msg)',
  "genai_extract_assistant_response(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))))",
  "genai_extract_user_prompt(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))))",
  "genai_extract_system_prompt(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))))",
  "genai_get_content_by_index(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))), 1)",
  "genai_get_content_by_role(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))), 'user')",
  "genai_get_role(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))), 2)",
  "genai_message_roles(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))))",
  "genai_has_tool_calls(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))))",
  "genai_is_truncated(pack_array(bag_pack('role', 'system', 'content', 'be brief'), bag_pack('role', 'user', 'content', msg), bag_pack('role', 'assistant', 'content', strcat('re ', id))), 'length')",
  "genai_get_pricing('gpt-4o')",
  "genai_cost('gpt-4o', id * 100, 50)",
  "genai_input_cost('gpt-4o', id)",
  "genai_output_cost('claude-3-5-sonnet', status)",
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
  if (typeof a === 'number' && typeof b === 'number')
    return a === b || Math.abs(a - b) <= 4 * Number.EPSILON * Math.abs(b);
  // The same inside arrays and bags (a series of logarithms).
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => lastBits(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const [ka, kb] = [Object.keys(a), Object.keys(b)];
    return (
      JSON.stringify(ka) === JSON.stringify(kb) &&
      ka.every((k) => lastBits((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    );
  }
  return JSON.stringify(a) === JSON.stringify(b);
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
