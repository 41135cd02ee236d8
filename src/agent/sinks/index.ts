/** The sinks by name, as the config names them. A new sink is one file, registered here. */
import { Registry } from '../../config/registry.js';
import { axiomSink } from './axiom.js';
import { consoleSink } from './console.js';
import { fileSink } from './file.js';
import { localSink } from './local.js';
import type { SinkSpec } from './sink.js';

export const sinks = new Registry<SinkSpec>('sink', [axiomSink, localSink, consoleSink, fileSink]);
