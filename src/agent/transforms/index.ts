/** The transforms by name, as the config names them. A new transform is one file, registered here. */
import { Registry } from '../../config/registry.js';
import { aplTransform } from './apl.js';
import { dedupeTransform } from './dedupe.js';
import { enrichTransform } from './enrich.js';
import { multilineTransform } from './multiline.js';
import { parseTransform } from './parse.js';
import { routeTransform } from './route.js';
import { sampleTransform } from './sample.js';
import { throttleTransform } from './throttle.js';
import type { TransformSpec } from './transform.js';

export const transforms = new Registry<TransformSpec>('transform', [
  parseTransform,
  multilineTransform,
  enrichTransform,
  aplTransform,
  routeTransform,
  sampleTransform,
  throttleTransform,
  dedupeTransform,
]);
