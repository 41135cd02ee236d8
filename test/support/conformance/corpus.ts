/**
 * Realistic APL queries across the tiers of apl.md, written for this project's tests. Each says what both
 * Axiom's language service and Ferry must do with it:
 *   accept   both accept it and name the output columns alike;
 *   names    both accept it; the column names differ where apl.md lets the service differ (given here);
 *   reject   both reject it;
 *   pending  the language service accepts it; Ferry does not run it yet and answers 400 naming it;
 *   lags     the language service rejects it but Axiom's backend runs it (apl.md 6.1), and so does Ferry.
 */
export interface CorpusEntry {
  apl: string;
  expect: 'accept' | 'names' | 'reject' | 'pending' | 'lags';
  /** For `names`: Ferry's column names, and why they differ. */
  columns?: string[];
  why?: string;
  /** For `pending`: text the 400 message must contain. */
  unsupported?: string;
}

const T = "['sample-http-logs']";

export const CORPUS: CorpusEntry[] = [
  // ---- Tier 1: filters, projections, sorting, limits
  { apl: `${T} | where status == '500' | take 10`, expect: 'accept' },
  { apl: `${T} | where _time > ago(1h) and method == 'POST' | project _time, uri, status`, expect: 'accept' },
  {
    apl: `${T} | where _time between (ago(1d) .. now()) | where toint(status) >= 500 | count`,
    expect: 'names',
    columns: ['count'],
    why: 'apl.md 4.7: the count operator names its column count (KQL: Count)',
  },
  {
    apl: `${T} | where uri contains 'api' and not(isempty(['geo.city'])) | project uri, city = ['geo.city'] | take 5`,
    expect: 'accept',
  },
  { apl: `${T} | where method in ('GET', 'HEAD') and status !in ('200', '304') | limit 20`, expect: 'accept' },
  {
    apl: `${T} | where user_agent has 'Firefox' or user_agent has_cs 'Chrome' | project _time, user_agent`,
    expect: 'accept',
  },
  {
    apl: `${T} | where uri startswith '/api/v1' and uri !endswith '.js' | sort by _time desc | take 100`,
    expect: 'accept',
  },
  { apl: `${T} | where content_type =~ 'TEXT/HTML' | project content_type`, expect: 'accept' },
  {
    apl: `${T} | where ['geo.country'] in~ ('france', 'GERMANY') | project ['geo.country'], ['geo.city']`,
    expect: 'accept',
  },
  { apl: `${T} | where uri matches regex @'/api/v[0-9]+/bank' | project uri`, expect: 'accept' },
  { apl: `${T} | where req_duration_ms between (1.0 .. 5.0) | project req_duration_ms`, expect: 'accept' },
  {
    apl: `${T} | where is_tls == true and resp_body_size_bytes > 2000 | project _time, resp_body_size_bytes`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend slow = req_duration_ms > 2, kb = resp_body_size_bytes / 1024.0 | project slow, kb`,
    expect: 'accept',
  },
  { apl: `${T} | extend status = toint(status) | where status >= 500 | project status, method`, expect: 'accept' },
  { apl: `${T} | project _time, duration = req_duration_ms * 1000, server_datacenter`, expect: 'accept' },
  { apl: `${T} | sort by req_duration_ms desc, _time asc | take 10 | project req_duration_ms`, expect: 'accept' },
  { apl: `${T} | top 5 by req_duration_ms | project uri, req_duration_ms`, expect: 'accept' },
  { apl: `${T} | distinct method, status`, expect: 'accept' },
  { apl: `${T} | distinct ['geo.country']`, expect: 'accept' },
  // ---- Tier 1: summarize and aggregations
  { apl: `${T} | summarize count()`, expect: 'accept' },
  { apl: `${T} | summarize count() by bin(_time, 1h)`, expect: 'accept' },
  { apl: `${T} | summarize count() by bin_auto(_time), method`, expect: 'accept' },
  {
    apl: `${T} | summarize avg(req_duration_ms), max(req_duration_ms), min(req_duration_ms) by status`,
    expect: 'accept',
  },
  {
    apl: `${T} | summarize sum(resp_body_size_bytes) by server_datacenter | sort by sum_resp_body_size_bytes desc`,
    expect: 'accept',
  },
  { apl: `${T} | summarize dcount(id) by ['geo.country'] | top 10 by dcount_id`, expect: 'accept' },
  { apl: `${T} | summarize countif(toint(status) >= 500), count() by method`, expect: 'accept' },
  { apl: `${T} | summarize percentile(req_duration_ms, 95) by bin(_time, 5m)`, expect: 'accept' },
  { apl: `${T} | summarize percentile(req_duration_ms, 99.9)`, expect: 'accept' },
  { apl: `${T} | summarize percentiles_array(req_duration_ms, 50, 90, 99) by method`, expect: 'accept' },
  {
    apl: `${T} | summarize errors = countif(status startswith '5'), total = count() by bin(_time, 1m) | extend rate = todouble(errors) / total`,
    expect: 'accept',
  },
  { apl: `${T} | summarize count() by method | top 3 by count_`, expect: 'accept' },
  { apl: `${T} | summarize max(_time)`, expect: 'accept' },
  { apl: `${T} | summarize count(), count() by method`, expect: 'accept' },
  { apl: `${T} | summarize n = count() by city = ['geo.city'], tostring(is_tls)`, expect: 'accept' },
  { apl: `${T} | summarize avg(req_duration_ms) by strlen(uri)`, expect: 'accept' },
  // ---- Tier 1 scalar functions
  {
    apl: `${T} | extend s = strcat(method, ' ', uri), l = strlen(uri), u = toupper(method), lo = tolower(method) | project s, l, u, lo`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend sub = substring(uri, 0, 8), c = coalesce(['geo.city'], 'unknown') | project sub, c`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend k = iff(req_duration_ms > 1, 'slow', 'fast'), cls = case(toint(status) >= 500, 'error', toint(status) >= 400, 'warn', 'ok') | project k, cls`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend r = round(req_duration_ms, 2), b = bin(req_duration_ms, 0.5), t = tostring(resp_body_size_bytes), i = toint('42'), d = todouble('1.5'), lg = tolong(status) | project r, b, t, i, d, lg`,
    expect: 'accept',
  },
  { apl: `${T} | where isnotempty(message) or isnull(message) or isnotnull(id) | project id`, expect: 'accept' },
  {
    apl: `let threshold = 2.5;\n${T} | where req_duration_ms > threshold | count`,
    expect: 'names',
    columns: ['count'],
    why: 'apl.md 4.7',
  },
  { apl: `let codes = dynamic(['500', '502']);\n${T} | where status in (codes) | project status`, expect: 'accept' },
  { apl: `print a = 1 + 2, b = now(), c = datetime(2024-01-01) + 1d, d = 90m / 1m`, expect: 'accept' },
  { apl: `print x = bin(datetime(2024-01-01 10:17), 15m), y = ago(7d) < now()`, expect: 'accept' },
  { apl: `datatable(name:string, n:long)['a', 1, 'b', 2] | where n > 1 | project name`, expect: 'accept' },
  // ---- Tier 2 that runs today
  { apl: `${T} | project-away user_agent, ['geo.country'] | take 1`, expect: 'accept' },
  { apl: `${T} | project-keep _time, method, status | take 1`, expect: 'accept' },
  { apl: `${T} | project-rename duration = req_duration_ms | project duration`, expect: 'accept' },
  { apl: `${T} | project-reorder status, method | take 1`, expect: 'accept' },
  { apl: `${T} | getschema`, expect: 'accept' },
  {
    apl: `${T} | summarize stdev(req_duration_ms), variance(req_duration_ms), make_set(method), make_list(status, 10) by server_datacenter`,
    expect: 'accept',
  },
  {
    apl: `${T} | summarize sumif(resp_body_size_bytes, is_tls), avgif(req_duration_ms, method == 'GET'), dcountif(id, is_tls) by method`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend h = hourofday(_time), dw = dayofweek(_time), sod = startofday(_time), m = getmonth(_time) | project h, dw, sod, m`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend x = extract('/api/v1/([a-z]+)', 1, uri), parts = split(uri, '/'), n = indexof(uri, 'api') | project x, parts, n`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend t = trim('/', uri), r = replace_string('api', 'API', uri), rr = replace_regex('v([0-9])', 'version$1', uri) | project t, r, rr`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend a = abs(req_duration_ms - 1), p = pow(2, 3), l = log10(resp_body_size_bytes), s = sqrt(req_duration_ms) | project a, p, l, s`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend diff = datetime_diff('second', now(), _time), later = datetime_add('hour', 1, _time) | project diff, later`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend arr = pack_array(method, status), bag = pack('m', method), n = array_length(pack_array(1, 2)) | project arr, bag, n`,
    expect: 'accept',
  },
  { apl: `${T} | extend h = hash_sha256(id), m = hash_md5(id) | project h, m`, expect: 'accept' },
  { apl: `${T} | where uri has_any ('bank', 'messages') | project uri`, expect: 'accept' },
  {
    apl: `${T} | where status !startswith '2' and uri !contains 'static' and method !~ 'get' | take 3`,
    expect: 'accept',
  },
  // ---- rejected by both
  { apl: `${T} | WHERE status == '500'`, expect: 'reject' },
  { apl: `${T} | where nosuchfield == 1`, expect: 'reject' },
  { apl: `${T} | where (status == '500'`, expect: 'reject' },
  { apl: `${T} | summarize Count()`, expect: 'reject' },
  { apl: `${T} | where method = 'GET'`, expect: 'reject' },
  { apl: `${T} | extend x = nosuchfunction(uri)`, expect: 'reject' },
  { apl: `${T} | take`, expect: 'reject' },
  { apl: `${T} | where method == 'GET' |`, expect: 'reject' },
  // ---- Tier 2 operators and aggregations
  { apl: `${T} | summarize arg_max(req_duration_ms, uri) by method`, expect: 'accept' },
  { apl: `${T} | summarize arg_min(_time, *) by server_datacenter`, expect: 'accept' },
  { apl: `${T} | summarize topk(uri, 5)`, expect: 'accept' },
  { apl: `${T} | summarize rate(resp_body_size_bytes) by bin(_time, 1m)`, expect: 'accept' },
  { apl: `${T} | parse uri with '/api/v1/' area '/' rest | project area, rest`, expect: 'accept' },
  { apl: `${T} | parse kind=regex user_agent with 'Chrome/' version:long @'[.]' | project version`, expect: 'accept' },
  { apl: `${T} | mv-expand parts = split(uri, '/') | project parts`, expect: 'accept' },
  {
    apl: `${T} | extend p = pack_array(1, 2) | mv-expand with_itemindex=i p to typeof(long) | project i, p`,
    expect: 'accept',
  },
  {
    apl: `${T} | join kind=inner (${T} | summarize n = count() by method) on method | project method, n`,
    expect: 'accept',
  },
  {
    apl: `${T} | summarize c = count() by method | join kind=leftouter (${T} | summarize s = sum(req_duration_ms) by method) on method`,
    expect: 'accept',
  },
  {
    apl: `${T} | lookup (datatable(method:string, label:string)['GET', 'read']) on method | project method, label`,
    expect: 'accept',
  },
  { apl: `${T} | union ${T} | count`, expect: 'names', columns: ['count'], why: 'apl.md 4.7' },
  { apl: `union withsource=ds ${T}, ${T} | summarize count() by ds`, expect: 'accept' },
  { apl: `${T} | search 'bank' | project uri`, expect: 'accept' },
  { apl: `${T} | where * has 'Firefox' | count`, expect: 'names', columns: ['count'], why: 'apl.md 4.7' },
  {
    apl: `${T} | sample 0.5 | project uri`,
    expect: 'lags',
    why: 'apl.md 2.1: sample takes a proportion in Axiom; language service 0.2.5 lags and rejects it',
  },
  // ---- accepted by the language service, not run by Ferry yet (400 naming what)
  { apl: `${T} | summarize histogram(req_duration_ms, 10) by method`, expect: 'accept' },
  { apl: `${T} | summarize topkif(uri, 3, method == 'GET')`, expect: 'accept' },
  { apl: `${T} | extend d = dynamic({'a': 1}) | evaluate bag_unpack(d)`, expect: 'pending', unsupported: 'evaluate' },
  { apl: `${T} | summarize arg_max(req_duration_ms, slowest = uri) by method`, expect: 'accept' },
  {
    apl: `${T} | project _time, ['geo.']*`,
    expect: 'lags',
    why: 'apl.md 2.1: an Axiom operator that language service 0.2.5 does not parse',
  },
  {
    apl: `${T} | extend-valid city = ['geo.city'] | project city`,
    expect: 'lags',
    why: 'apl.md 2.1: an Axiom operator that language service 0.2.5 does not parse',
  },
  {
    apl: `${T} | redact replaceToken='x' @'[0-9]+' on uri | project uri`,
    expect: 'lags',
    why: 'apl.md 2.1: an Axiom operator that language service 0.2.5 does not parse',
  },
  {
    apl: `${T} | parse-kv message as (QCD, linear) with (pair_delimiter=' ', kv_delimiter='=') | take 1`,
    expect: 'lags',
    why: 'apl.md 2.1: an Axiom operator that language service 0.2.5 does not parse',
  },
  { apl: `${T} | make-series count() default=0 on _time step 1h by method`, expect: 'accept' },
  {
    apl: `${T} | make-series avg(req_duration_ms), c = count() on _time from ago(1d) to now() step 1h`,
    expect: 'accept',
  },
  { apl: `${T} | make-series count() on _time in range(ago(1d), now(), 1h)`, expect: 'accept' },
  {
    apl: `${T} | summarize percentileif(req_duration_ms, 95, method == 'GET')`,
    expect: 'lags',
    why: 'apl.md 6.1: language service 0.2.5 does not know percentileif',
  },
  // ---- Tier 3 function families, in the shape of the docs' examples. Unnamed calls are named by rules
  // of each function in Axiom (strlen(x) -> strlen_x, degrees(x) -> Column1, cos(x) -> x); these name their
  // columns, as the coverage suite's queries do.
  {
    apl: `${T} | extend angle = atan2(resp_header_size_bytes, resp_body_size_bytes) | project deg = degrees(angle), c = cos(angle)`,
    expect: 'accept',
  },
  {
    apl: `${T} | where isint(resp_body_size_bytes) and isreal(req_duration_ms) | project g = gamma(req_duration_ms), e = exp2(req_duration_ms)`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend anon_id = hash_sha256(id) | summarize requests = count() by anon_id | top 5 by requests`,
    expect: 'accept',
  },
  { apl: `${T} | project uri, sha1 = hash_sha1(uri), sha512 = hash_sha512(uri)`, expect: 'accept' },
  {
    apl: `${T} | extend parts = split(uri, '/') | project r = array_reverse(parts), s = array_sort_asc(parts), l = array_rotate_left(parts, 1)`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend parts = split(uri, '/') | project sr = array_shift_right(parts, 1), sp = array_split(parts, 2), i = array_iff(dynamic([true, false]), parts, parts)`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend d = pack_dictionary('m', method, 's', status) | project has_m = bag_has_key(d, 'm'), get = array_select_dict(pack_array(d), 'm', 'GET')`,
    expect: 'accept',
  },
  {
    apl: `${T} | summarize methods = make_set(method) by ['geo.country'] | project ['geo.country'], has_get = set_has_element(methods, 'GET')`,
    expect: 'lags',
    why: 'language service 0.2.5 does not know a function Axiom documents and runs',
  },
  {
    apl: `${T} | project c = ipv4_compare('192.168.1.1', '192.168.1.255', 24), m = ipv4_is_match('10.0.0.1', '10.0.0.9', 28), f = format_ipv4('10.1.2.3')`,
    expect: 'lags',
    why: 'language service 0.2.5 does not know a function Axiom documents and runs',
  },
  {
    apl: `${T} | project s = ipv4_netmask_suffix('192.168.1.1/24'), m = parse_ipv4_mask('192.1.168.2', 24)`,
    expect: 'accept',
  },
  {
    apl: `${T} | project t = translate('/', '.', uri), q = regex_quote('1.5*'), c = strcmp(method, 'GET'), title = totitle(tolower(method))`,
    expect: 'lags',
    why: 'language service 0.2.5 does not know a function Axiom documents and runs',
  },
  {
    apl: `${T} | project i = indexof(uri, 'v', 1, -1, 1), n = countof_regex('[0-9]', uri), t = trim_regex('/', uri)`,
    expect: 'accept',
  },
  {
    apl: `${T} | project h = tohex(resp_body_size_bytes), b = parse_bytes('2 KB'), r = strrep(method, 2, '-'), q = quote(method)`,
    expect: 'accept',
  },
  {
    apl: `${T} | summarize durations = make_list(req_duration_ms) by method | extend stats = series_stats_dynamic(durations) | project method, stats`,
    expect: 'lags',
    why: 'language service 0.2.5 does not know a function Axiom documents and runs',
  },
  {
    apl: `${T} | make-series n = count() on _time step 1h by method | extend filled = series_fill_linear(n), smooth = series_fir(n, dynamic([1, 1, 1]))`,
    expect: 'lags',
    why: 'language service 0.2.5 does not know a function Axiom documents and runs',
  },
  {
    apl: `${T} | extend kb = resp_body_size_bytes / 1024.0 | summarize t = topkif(method, 2, kb > 2) | project t`,
    expect: 'accept',
  },
  // ---- how Axiom names unnamed calls: after the column, by a rule of the function's, or ColumnN
  {
    apl: `${T} | extend angle = atan2(resp_header_size_bytes, resp_body_size_bytes) | project degrees(angle), cos(angle), round(angle, 2)`,
    expect: 'accept',
  },
  {
    apl: `${T} | extend parts = split(uri, '/') | project strlen(uri), gettype(status), array_sort_asc(parts), array_length(parts), tolower(method)`,
    expect: 'accept',
  },
  { apl: `${T} | summarize count() by strlen(method), toupper(method)`, expect: 'accept' },
];
