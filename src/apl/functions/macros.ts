/**
 * SQL macros the compiled queries call, created when the store opens (persisted with CREATE OR REPLACE so
 * an upgraded binary replaces older definitions). They hold the formatting rules APL takes from Go.
 */
import { timeExpression } from '../../sql/time.js';

const GO_DURATION_UNITS = `CASE regexp_extract(p, '[a-zµμ]+$') WHEN 'ns' THEN 1 WHEN 'us' THEN 1e3 WHEN 'µs' THEN 1e3 WHEN 'μs' THEN 1e3
  WHEN 'ms' THEN 1e6 WHEN 's' THEN 1e9 WHEN 'm' THEN 6e10 WHEN 'h' THEN 3.6e12 END`;

export const APL_MACROS = [
  // RFC 3339 with nanoseconds, trailing zeros trimmed, always UTC: 2025-03-26T12:12:42.68112905Z.
  `CREATE OR REPLACE MACRO ferry_rfc3339(ts) AS CASE WHEN ts IS NULL THEN NULL ELSE
     strftime(ts, '%Y-%m-%dT%H:%M:%S') ||
     (CASE WHEN ((epoch_ns(ts) % 1000000000) + 1000000000) % 1000000000 = 0 THEN ''
      ELSE '.' || rtrim(lpad(CAST(((epoch_ns(ts) % 1000000000) + 1000000000) % 1000000000 AS VARCHAR), 9, '0'), '0') END)
     || 'Z' END`,
  // n / unit with up to `digits` fractional digits, trailing zeros trimmed (Go's duration formatting).
  `CREATE OR REPLACE MACRO ferry_frac(n, unit, digits) AS CAST(n // unit AS VARCHAR) ||
     (CASE WHEN n % unit = 0 THEN '' ELSE '.' || rtrim(lpad(CAST(n % unit AS VARCHAR), digits, '0'), '0') END)`,
  // Go's time.Duration.String(): 0s, 1.5µs, 300ms, 1m20s, 2h0m0s.
  `CREATE OR REPLACE MACRO ferry_go_duration_abs(a) AS CASE
     WHEN a = 0 THEN '0s'
     WHEN a < 1000 THEN CAST(a AS VARCHAR) || 'ns'
     WHEN a < 1000000 THEN ferry_frac(a, 1000, 3) || 'µs'
     WHEN a < 1000000000 THEN ferry_frac(a, 1000000, 6) || 'ms'
     ELSE (CASE WHEN a >= 3600000000000 THEN CAST(a // 3600000000000 AS VARCHAR) || 'h' ELSE '' END) ||
          (CASE WHEN a >= 60000000000 THEN CAST((a // 60000000000) % 60 AS VARCHAR) || 'm' ELSE '' END) ||
          ferry_frac(a % 60000000000, 1000000000, 9) || 's' END`,
  `CREATE OR REPLACE MACRO ferry_go_duration(d) AS CASE WHEN d IS NULL THEN NULL
     WHEN d < 0 THEN '-' || ferry_go_duration_abs(-d) ELSE ferry_go_duration_abs(d) END`,
  // Go's time.ParseDuration: "300ms", "-1.5h", "2h45m"; anything else is NULL.
  `CREATE OR REPLACE MACRO ferry_parse_go_duration(s) AS CASE
     WHEN s = '0' OR s = '+0' OR s = '-0' THEN CAST(0 AS BIGINT)
     WHEN regexp_full_match(s, '[+-]?(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+') THEN
       CAST((CASE WHEN starts_with(s, '-') THEN -1 ELSE 1 END) * list_sum(list_transform(
         regexp_extract_all(s, '([0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)', 0),
         p -> CAST(regexp_extract(p, '^[0-9.]+') AS DOUBLE) * (${GO_DURATION_UNITS})
       )) AS BIGINT)
     END`,
  // An IPv4 address (optionally with /bits, ignored here) as a number; NULL unless four octets 0-255.
  `CREATE OR REPLACE MACRO ferry_ipv4(s) AS CASE WHEN regexp_full_match(s, '(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})(/\\d{1,2})?')
     AND list_max(list_transform(string_split(split_part(s, '/', 1), '.'), o -> CAST(o AS INTEGER))) <= 255
     THEN list_reduce(list_transform(string_split(split_part(s, '/', 1), '.'), o -> CAST(o AS BIGINT)), (acc, o) -> acc * 256 + o) END`,
  // The prefix length of "a.b.c.d/n" (32 without one); NULL when over 32.
  `CREATE OR REPLACE MACRO ferry_ipv4_bits(s) AS CASE WHEN contains(s, '/') THEN
     (CASE WHEN TRY_CAST(split_part(s, '/', 2) AS INTEGER) BETWEEN 0 AND 32 THEN TRY_CAST(split_part(s, '/', 2) AS INTEGER) END) ELSE 32 END`,
  // histogram() inside another expression: n equal-width bins from DuckDB's count per distinct value.
  `CREATE OR REPLACE MACRO ferry_histogram(m, n) AS (list_transform([{'e': map_entries(m), 'lo': list_min(map_keys(m)),
     'hi': list_max(map_keys(m))}], s -> list_transform(range(n), i -> {'lower': s.lo + i * (s.hi - s.lo) / n,
     'upper': s.lo + (i + 1) * (s.hi - s.lo) / n, 'count': CAST(COALESCE(list_sum(list_transform(list_filter(s.e,
       x -> (CASE WHEN s.hi = s.lo THEN n - 1 ELSE least(CAST(floor((x.key - s.lo) * n / (s.hi - s.lo)) AS BIGINT), n - 1) END) = i),
       x -> x.value)), 0) AS BIGINT)})))[1]`,
  // histogram()'s answer, [{lower, upper, count}], from the range of the values and the rows counted per bin
  // number, [{b, c}] (the compiler plans it: see compiler.ts histogramAggregateSql).
  `CREATE OR REPLACE MACRO ferry_histogram_bins(lo, hi, n, counts) AS list_transform(range(n), i -> {
     'lower': lo + i * (hi - lo) / n, 'upper': lo + (i + 1) * (hi - lo) / n,
     'count': CAST(COALESCE(list_sum(list_transform(list_filter(counts, e -> e.b = i), e -> e.c)), 0) AS BIGINT)})`,
  // todatetime() of a string: RFC 3339 / ISO 8601, or epoch digits with the unit guessed as on ingest.
  `CREATE OR REPLACE MACRO ferry_parse_datetime(s) AS ${timeExpression('s')}`,
];
