/**
 * CSV bodies become NDJSON for the event store. csv-parse handles quoting, embedded newlines and custom
 * delimiters; values stay strings (CSV has no types, and guessing would turn "007" into 7).
 */
import { parse } from 'csv-parse';
import { Transform, type TransformCallback } from 'node:stream';
import { badRequest } from '../http/errors.js';

export interface CsvOptions {
  delimiter?: string;
  /** Field names from X-Axiom-CSV-Fields; when given, the first line is data, not a header. */
  fields?: string[];
}

/** Counts CSV records that could not be read (wrong column count, bad quoting), for the ingest failures. */
export interface CsvStats {
  skipped: { line: number; error: string }[];
}

export function csvToNdjson(opts: CsvOptions, stats: CsvStats): Transform[] {
  const delimiter = opts.delimiter ?? ',';
  if ([...delimiter].length !== 1) throw badRequest(`csv-delimiter must be a single character, got "${delimiter}"`);
  const parser = parse({
    delimiter,
    columns: opts.fields && opts.fields.length > 0 ? opts.fields : true,
    bom: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    relax_quotes: false,
  });
  parser.on('skip', (err: Error & { lines?: number }) => {
    stats.skipped.push({ line: err.lines ?? 0, error: err.message });
  });
  const toLines = new Transform({
    writableObjectMode: true,
    transform(record: Record<string, string>, _enc: BufferEncoding, cb: TransformCallback) {
      cb(null, `${JSON.stringify(record)}\n`);
    },
  });
  return [parser, toLines];
}
