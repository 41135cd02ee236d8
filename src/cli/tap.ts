/**
 * `ferry tap [COMPONENT…]`: prints the events leaving sources and transforms of a running agent, read
 * from its API's /tap as they pass, at most `--rate` a second, only those `--where` holds for. The agent
 * never waits for a tap: what it skipped is said on stderr.
 */
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import type { FerryConfig } from './config.js';
import { agentApiUrl, unreachable } from './agent-api.js';
import { CommandError } from './service-client.js';

export async function tapCommand(
  argv: string[],
  loadConfig: (file: string | undefined) => FerryConfig,
  out: (text: string) => void,
): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      where: { type: 'string', short: 'w' },
      rate: { type: 'string', default: '100' },
      limit: { type: 'string' },
      meta: { type: 'boolean', default: false },
      api: { type: 'string' },
      config: { type: 'string', short: 'c' },
    },
    allowPositionals: true,
    strict: true,
  });
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
    throw new CommandError(`--limit takes a whole number of events, not "${values.limit}"`, 2);
  const base = agentApiUrl(values, loadConfig);
  const url = new URL('/tap', base);
  for (const c of positionals) url.searchParams.append('component', c);
  if (values.where) url.searchParams.set('where', values.where);
  url.searchParams.set('rate', values.rate);

  await new Promise<void>((resolve, reject) => {
    let shown = 0;
    let ended = false;
    const req = request(url, (res) => {
      if (res.statusCode !== 200) {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => {
          let message = body;
          try {
            message = (JSON.parse(body) as { message?: string }).message ?? body;
          } catch {
            // not JSON: said as it came
          }
          // A name or filter the agent refused is the caller's to fix.
          reject(
            new CommandError(
              `tap refused (${res.statusCode}): ${message}`,
              res.statusCode === 400 || res.statusCode === 404 ? 2 : 1,
            ),
          );
        });
        return;
      }
      const stop = () => {
        ended = true;
        req.destroy();
        resolve();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // Its reader gone (`ferry tap | head`): done, not a crash.
      process.stdout.once('error', stop);
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buf += d;
        let nl: number;
        while (!ended && (nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const m = /^\{"skipped":(\d+)\}$/.exec(line);
          if (m) {
            process.stderr.write(`ferry tap: ${m[1]} event(s) skipped (past --rate, or not read in time)\n`);
            continue;
          }
          out(`${values.meta ? line : eventOf(line)}\n`);
          if (limit !== undefined && ++shown >= limit) stop();
        }
      });
      // The stream ends (the agent stopped, reloaded) or is cut (the agent was killed): said, exit 1.
      const gone = () => {
        if (ended) return;
        ended = true;
        reject(new CommandError('the agent ended the tap (it stopped, reloaded or was killed)', 1));
      };
      res.on('end', gone);
      res.on('close', gone);
      res.on('error', gone);
    });
    req.on('error', (err) => {
      if (!ended) reject(unreachable(base, err));
    });
    req.end();
  });
}

/** The event of a tap line `{"component":…,"event":{…}}`, as its text. */
function eventOf(line: string): string {
  const at = line.indexOf(',"event":');
  return at < 0 ? line : line.slice(at + ',"event":'.length, -1);
}
