/**
 * Builds the local console (src/console/app) into dist/console: one JavaScript and one CSS file, named by
 * their content's hash, and the index.html that loads them. Everything the pages use is bundled (esbuild):
 * no CDN, no font or script from elsewhere, so the console works with no network.
 *
 * Run by `npm run build` after tsc: node dist/src/console/build.js
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { AGGREGATE_FUNCTIONS } from '../apl/functions/aggregate.js';
import { SCALAR_FUNCTIONS } from '../apl/functions/scalar.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const OUT = join(ROOT, 'dist', 'console');

function hashed(name: string, ext: string, text: string): string {
  return `${name}-${createHash('sha256').update(text).digest('hex').slice(0, 12)}.${ext}`;
}

const result = await build({
  entryPoints: [join(ROOT, 'src', 'console', 'app', 'main.tsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  write: false,
  outdir: 'out',
  legalComments: 'none',
  // The editor completes the functions the service runs: its own tables, not a copy.
  define: {
    __APL_FUNCTIONS__: JSON.stringify({
      scalar: Object.keys(SCALAR_FUNCTIONS).sort(),
      aggregate: Object.keys(AGGREGATE_FUNCTIONS).sort(),
    }),
  },
  logLevel: 'warning',
});
const js = result.outputFiles.find((f) => f.path.endsWith('.js'))!.text;
const css = result.outputFiles.find((f) => f.path.endsWith('.css'))?.text ?? '';
rmSync(OUT, { recursive: true, force: true });
mkdirSync(join(OUT, 'assets'), { recursive: true });
const jsName = hashed('console', 'js', js);
const cssName = hashed('console', 'css', css);
writeFileSync(join(OUT, 'assets', jsName), js);
writeFileSync(join(OUT, 'assets', cssName), css);
const page = readFileSync(join(ROOT, 'src', 'console', 'app', 'index.html'), 'utf8')
  .replace('{{css}}', `/assets/${cssName}`)
  .replace('{{js}}', `/assets/${jsName}`);
writeFileSync(join(OUT, 'index.html'), page);
console.log(`console built: dist/console/assets/${basename(jsName)} (${js.length} bytes), ${cssName} (${css.length})`);
