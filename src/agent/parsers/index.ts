/** The parsers by name, as the config names them. A new parser is one file, registered here. */
import { Options } from '../../config/options.js';
import { configureComponent, Registry } from '../../config/registry.js';
import { criParser, dockerParser } from './container.js';
import { jsonParser } from './json.js';
import { logfmtParser } from './logfmt.js';
import type { Parser, ParserSpec } from './parser.js';
import { plainParser } from './plain.js';
import { regexParser } from './regex.js';
import { syslogParser } from './syslog.js';

export const parsers = new Registry<ParserSpec>('parser', [
  jsonParser,
  logfmtParser,
  plainParser,
  syslogParser,
  dockerParser,
  criParser,
  regexParser,
]);

/** A parser from settings written as in the config (`{type: 'regex', pattern: '…'}`): tests and tools. */
export function createParser(cfg: { type: string } & Record<string, unknown>): Parser {
  const { type, ...rest } = cfg;
  const spec = parsers.get(type);
  return spec.create(configureComponent(spec, new Options(rest, `parser ${type}`)));
}

export type { LogEvent, Parser, ParserSpec } from './parser.js';
