/**
 * geo_info_from_ip_address: an offline GeoIP lookup, registered in DuckDB as the SQL function
 * ferry_geo_info(ip) → JSON text with the keys Axiom documents: country (its English name), country_iso,
 * state (the subdivision's name), city, latitude, longitude and time_zone; what is not known is "". The
 * data comes from the optional dependency geoip-lite (MaxMind GeoLite2 data, CC BY-SA 4.0), loaded on the
 * first call only: it costs a hundred MB of memory and a noticeable pause (docs/benchmarks.md), so a
 * service that never asks pays nothing. Country names come from Node's own Intl data, subdivision names
 * from iso-3166, both also loaded on the first call (together 15 MiB of a process that never asks).
 * Without geoip-lite, the function answers a clear error.
 */
import { createRequire } from 'node:module';
import { type DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { jsFunction, type JsBudget } from './duckdb-function.js';

interface GeoLookup {
  lookup(ip: string): { country: string; region: string; city: string; timezone: string; ll: [number, number] } | null;
}

const require = createRequire(import.meta.url);
let geo: GeoLookup | null | undefined;
let countryNames: Intl.DisplayNames | undefined;
let subdivisionNames: Map<string, string> | undefined;

function load(): GeoLookup | null {
  if (geo === undefined) {
    try {
      geo = require('geoip-lite') as GeoLookup;
    } catch {
      geo = null;
    }
  }
  return geo;
}

function countryName(iso: string): string {
  try {
    countryNames ??= new Intl.DisplayNames(['en'], { type: 'region' });
    return countryNames.of(iso) ?? iso;
  } catch {
    return iso;
  }
}

/** The geographic attributes of an address as JSON text, or null when it is unknown or not an address. */
export function geoInfo(ip: string): string | null {
  const g = load();
  if (!g) throw new Error('geo_info_from_ip_address needs the optional package geoip-lite, which is not installed');
  const r = g.lookup(ip.trim());
  if (!r) return null;
  const iso = r.country || '';
  return JSON.stringify({
    country: iso ? countryName(iso) : '',
    country_iso: iso,
    state: r.region ? (subdivisions().get(`${iso}-${r.region}`) ?? r.region) : '',
    city: r.city || '',
    latitude: r.ll?.[0] ?? null,
    longitude: r.ll?.[1] ?? null,
    time_zone: r.timezone || '',
  });
}

/** ISO 3166-2 subdivision names by code ("US-CA" → California); iso-3166 is an ES module without top-level await. */
function subdivisions(): Map<string, string> {
  if (!subdivisionNames) {
    const { iso31662 } = require('iso-3166') as typeof import('iso-3166');
    subdivisionNames = new Map(iso31662.map((s) => [s.code, s.name]));
  }
  return subdivisionNames;
}

export function geoInfoFunction(budget: JsBudget): DuckDBScalarFunction {
  return jsFunction<[string]>(
    'ferry_geo_info',
    [VARCHAR],
    VARCHAR,
    (ip) => geoInfo(String(ip)),
    budget,
    'geo_info_from_ip_address',
  );
}
