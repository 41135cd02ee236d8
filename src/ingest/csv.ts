/**
 * CSV bodies become NDJSON for the event store. csv-parse handles quoting, embedded newlines and custom
 * delimiters; values stay strings (CSV has no types, and guessing would turn "007" into 7).
 *
 * Records are built here from the header rather than by csv-parse's `columns`, whose objects drop a
 * `__proto__` column (it sets the prototype) and let a repeated header overwrite the first. Here every
 * name is a field, and a repeated one keeps its first column's value, as a JSON object keeps its first
 * duplicate key; the records where a later column's value was set aside are counted.
 */
import { parse } from 'csv-parse';
import { Transform, type TransformCallback } from 'node:stream';
import { invalidBody } from './errors.js';

export interface CsvOptions {
  delimiter?: string;
  /** Field names from X-Axiom-CSV-Fields; when given, the first line is data, not a header. */
  fields?: string[];
}

/** CSV records that could not be read (wrong column count, bad quoting), and those a repeated header cut. */
export interface CsvStats {
  skipped: { line: number; error: string }[];
  /** Records in which a repeated header's later column held a value that the first one's was kept over. */
  collisions: number;
}

interface ParsedRecord {
  record: string[];
  info: { lines: number };
}

export function csvToNdjson(opts: CsvOptions, stats: CsvStats): Transform[] {
  const delimiter = opts.delimiter ?? ',';
  if ([...delimiter].length !== 1) throw invalidBody(`csv-delimiter must be a single character, got "${delimiter}"`);
  const parser = parse({
    delimiter,
    bom: true,
    info: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    relax_quotes: false,
    // The header's length is checked below: with X-Axiom-CSV-Fields the first record is data.
    relax_column_count: true,
  });
  parser.on('skip', (err: Error & { lines?: number }) => {
    stats.skipped.push({ line: err.lines ?? 0, error: err.message });
  });
  let header = opts.fields && opts.fields.length > 0 ? opts.fields : undefined;
  const toLines = new Transform({
    writableObjectMode: true,
    transform({ record, info }: ParsedRecord, _enc: BufferEncoding, cb: TransformCallback) {
      if (!header) {
        header = record;
        return cb();
      }
      if (record.length !== header.length) {
        stats.skipped.push({
          line: info.lines,
          error: `Invalid Record Length: columns length is ${header.length}, got ${record.length} on line ${info.lines}`,
        });
        return cb();
      }
      // No prototype: `__proto__` or `constructor` is a column like any other.
      const event = Object.create(null) as Record<string, string>;
      let collided = false;
      header.forEach((name, i) => {
        if (Object.hasOwn(event, name)) collided ||= record[i] !== '' && record[i] !== event[name];
        else event[name] = record[i]!;
      });
      if (collided) stats.collisions++;
      cb(null, `${JSON.stringify(event)}\n`);
    },
  });
  return [parser, toLines];
}
