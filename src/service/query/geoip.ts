/**
 * geo_info_from_ip_address: an offline GeoIP lookup, registered in DuckDB as the SQL function
 * ferry_geo_info(ip) → JSON text with the keys Axiom documents: country (its English name), country_iso,
 * state (the subdivision's name), city, latitude, longitude and time_zone; what is not known is "". The
 * data comes from the optional dependency geoip-lite (MaxMind GeoLite2 data, CC BY-SA 4.0), loaded on the
 * first call only: it costs a hundred MB of memory and a noticeable pause (docs/benchmarks.md), so a
 * service that never asks pays nothing. Country names come from Node's own Intl data, subdivision names
 * from iso-3166 (loaded with the function only where geoip-lite is installed). Without geoip-lite, the
 * function answers a clear error.
 */
import { createRequire } from 'node:module';
import { type DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { jsFunction, type JsBudget } from './duckdb-function.js';

interface GeoLookup {
  lookup(ip: string): { country: string; region: string; city: string; timezone: string; ll: [number, number] } | null;
}

const require = createRequire(import.meta.url);
let geo: GeoLookup | null | undefined;
const countryNames = new Intl.DisplayNames(['en'], { type: 'region' });

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
    return countryNames.of(iso) ?? iso;
  } catch {
    return iso;
  }
}

/** The geographic attributes of an address as JSON text, or null when it is unknown or not an address. */
export function geoInfo(ip: string, subdivisions: ReadonlyMap<string, string>): string | null {
  const g = load();
  if (!g) throw new Error('geo_info_from_ip_address needs the optional package geoip-lite, which is not installed');
  const r = g.lookup(ip.trim());
  if (!r) return null;
  const iso = r.country || '';
  return JSON.stringify({
    country: iso ? countryName(iso) : '',
    country_iso: iso,
    state: r.region ? (subdivisions.get(`${iso}-${r.region}`) ?? r.region) : '',
    city: r.city || '',
    latitude: r.ll?.[0] ?? null,
    longitude: r.ll?.[1] ?? null,
    time_zone: r.timezone || '',
  });
}

/** ISO 3166-2 subdivision names by code ("US-CA" → California), where geoip-lite is there to need them. */
async function subdivisionNames(): Promise<Map<string, string>> {
  try {
    require.resolve('geoip-lite');
  } catch {
    return new Map();
  }
  const { iso31662 } = await import('iso-3166');
  return new Map(iso31662.map((s) => [s.code, s.name]));
}

export async function geoInfoFunction(budget: JsBudget): Promise<DuckDBScalarFunction> {
  const subdivisions = await subdivisionNames();
  return jsFunction<[string]>(
    'ferry_geo_info',
    [VARCHAR],
    VARCHAR,
    (ip) => geoInfo(String(ip), subdivisions),
    budget,
    'geo_info_from_ip_address',
  );
}
