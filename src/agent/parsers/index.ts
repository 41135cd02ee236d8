/** The parsers by name, as the config names them. */
import { ContainerParser } from './container.js';
import { JsonParser } from './json.js';
import { LogfmtParser } from './logfmt.js';
import type { Parser } from './parser.js';
import { PlainParser } from './plain.js';
import { RegexParser } from './regex.js';
import { SyslogParser } from './syslog.js';

export type ParserConfig =
  | { type: 'json' }
  | { type: 'logfmt' }
  | { type: 'plain' }
  | { type: 'regex'; pattern: string }
  | { type: 'syslog'; rfc?: '3164' | '5424' | 'auto'; timezone?: string }
  | { type: 'docker' }
  | { type: 'cri' };

/** A new parser (with its own partial-line state) for one source. */
export function createParser(cfg: ParserConfig): Parser {
  switch (cfg.type) {
    case 'json': return new JsonParser();
    case 'logfmt': return new LogfmtParser();
    case 'plain': return new PlainParser();
    case 'regex': return new RegexParser(cfg.pattern);
    case 'syslog': return new SyslogParser(cfg.rfc ?? 'auto', undefined, cfg.timezone ?? 'local');
    case 'docker': return new ContainerParser('docker');
    case 'cri': return new ContainerParser('cri');
  }
}

export type { LogEvent, Parser } from './parser.js';
