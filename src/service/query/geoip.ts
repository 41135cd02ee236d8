/**
 * geo_info_from_ip_address: an offline GeoIP lookup, registered in DuckDB as the SQL function
 * ferry_geo_info(ip) → JSON text. The data comes from the optional dependency geoip-lite (MaxMind GeoLite2
 * data, CC BY-SA 4.0), loaded on the first call only: it costs a hundred MB of memory and a noticeable
 * pause (docs/benchmarks.md), so a service that never asks pays nothing. Without the package, the function answers a clear error.
 */
import { createRequire } from 'node:module';
import { DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';

interface GeoLookup {
  lookup(ip: string): { country: string; region: string; city: string; timezone: string; ll: [number, number] } | null;
}

let geo: GeoLookup | null | undefined;

function load(): GeoLookup | null {
  if (geo === undefined) {
    try {
      geo = createRequire(import.meta.url)('geoip-lite') as GeoLookup;
    } catch {
      geo = null;
    }
  }
  return geo;
}

/** The geographic attributes of an address as JSON text, or null when it is unknown or not an address. */
export function geoInfo(ip: string): string | null {
  const g = load();
  if (!g) throw new Error('geo_info_from_ip_address needs the optional package geoip-lite, which is not installed');
  const r = g.lookup(ip.trim());
  if (!r) return null;
  return JSON.stringify({
    country: r.country || null,
    state: r.region || null,
    city: r.city || null,
    latitude: r.ll?.[0] ?? null,
    longitude: r.ll?.[1] ?? null,
    timezone: r.timezone || null,
  });
}

export function geoInfoFunction(): DuckDBScalarFunction {
  return DuckDBScalarFunction.create({
    name: 'ferry_geo_info',
    mainFunction: (_info, input, output) => {
      const v = input.getColumnVector(0);
      for (let i = 0; i < input.rowCount; i++) {
        const ip = v.getItem(i);
        output.setItem(i, ip === null ? null : geoInfo(String(ip)));
      }
      output.flush();
    },
    returnType: VARCHAR,
    parameterTypes: [VARCHAR],
  });
}
