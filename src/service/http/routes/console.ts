/**
 * The local console (src/console/app, built into dist/console by `npm run build`): its page at `/` and its
 * files at /assets/*, for anyone who can reach the listener. They hold no data: the pages ask the API with
 * the token the user signs in with, sent as an Authorization header (never a cookie, so no other site can
 * make a browser send it: CSRF has nothing to ride on), and held for the tab only.
 *
 * Every answer forbids what the console does not do: scripts, styles, images and connections from any
 * other origin, inline scripts, framing, and referrers.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { notFoundError as notFound } from '../errors.js';

// Run from the TypeScript sources (the tests), the console is the built one in dist/.
const CONSOLE_DIR = fileURLToPath(
  import.meta.url.endsWith('.ts')
    ? new URL('../../../../dist/console/', import.meta.url)
    : new URL('../../../../console/', import.meta.url),
);

/**
 * The page's policy. The editor (CodeMirror) writes its styles into <style> elements: they carry a nonce
 * made for each answer of the page, so no other inline style (nor any inline script) is applied.
 */
export function consoleCsp(styleNonce?: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self'${styleNonce ? ` 'nonce-${styleNonce}'` : ''}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
};

interface ConsoleFiles {
  index: string;
  assets: Map<string, Buffer>;
}

/** The built console, read once (a few hundred kilobytes); undefined when it was not built. */
function readConsole(): ConsoleFiles | undefined {
  const index = join(CONSOLE_DIR, 'index.html');
  if (!existsSync(index)) return undefined;
  const assets = new Map<string, Buffer>();
  for (const name of readdirSync(join(CONSOLE_DIR, 'assets')))
    assets.set(name, readFileSync(join(CONSOLE_DIR, 'assets', name)));
  return { index: readFileSync(index, 'utf8'), assets };
}

function secured(reply: FastifyReply, styleNonce?: string): FastifyReply {
  return reply
    .header('Content-Security-Policy', consoleCsp(styleNonce))
    .header('X-Content-Type-Options', 'nosniff')
    .header('X-Frame-Options', 'DENY')
    .header('Referrer-Policy', 'no-referrer')
    .header('Cross-Origin-Opener-Policy', 'same-origin')
    .header('Cross-Origin-Resource-Policy', 'same-origin');
}

export function consoleRoutes(app: FastifyInstance): void {
  let files: ConsoleFiles | undefined | null = null;
  const built = () => {
    if (files === null) files = readConsole();
    if (!files) throw notFound('the console is not built: `npm run build` builds it into dist/console');
    return files;
  };
  app.get('/', async (_req, reply) => {
    const nonce = randomBytes(18).toString('base64');
    return secured(reply, nonce)
      .header('Cache-Control', 'no-store')
      .type(TYPES['.html']!)
      .send(built().index.replace('{{nonce}}', nonce));
  });
  app.get<{ Params: { file: string } }>('/assets/:file', async (req, reply) => {
    const body = built().assets.get(req.params.file);
    if (!body) throw notFound(`no console file ${req.params.file}`);
    return secured(reply)
      .header('Cache-Control', 'public, max-age=31536000, immutable')
      .type(TYPES[extname(req.params.file)] ?? 'application/octet-stream')
      .send(body);
  });
}
