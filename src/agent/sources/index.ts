/** The sources by name, as the config names them. A new source is one file, registered here. */
import { Registry } from '../../config/registry.js';
import { fileSource } from './file/file-source.js';
import { hostMetricsSource } from './host-metrics.js';
import { httpSource } from './http.js';
import { journaldSource } from './journald.js';
import { otlpSource } from './otlp.js';
import type { SourceSpec } from './source.js';
import { stdinSource } from './stdin.js';
import { syslogSource } from './syslog.js';

export const sources = new Registry<SourceSpec>('source', [
  fileSource,
  stdinSource,
  journaldSource,
  syslogSource,
  httpSource,
  otlpSource,
  hostMetricsSource,
]);
