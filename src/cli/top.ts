/**
 * `ferry top`: each component of a running agent with its events in and out per second, drops, errors,
 * queue and lag, from its API's /components, refreshed in place on a terminal and as plain tables one
 * after another otherwise (a pipe, a log).
 */
import { parseArgs } from 'node:util';
import type { ComponentStats } from '../agent/component-stats.js';
import { parseDuration } from '../util/units.js';
import type { FerryConfig } from './config.js';
import { agentApiUrl, unreachable } from './agent-api.js';
import { renderTable } from './query-output.js';
import { CommandError } from './service-client.js';

export async function topCommand(
  argv: string[],
  loadConfig: (file: string | undefined) => FerryConfig,
  out: (text: string) => void,
  tty = process.stdout.isTTY === true,
): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      interval: { type: 'string', default: '1s' },
      count: { type: 'string' },
      api: { type: 'string' },
      config: { type: 'string', short: 'c' },
    },
    strict: true,
  });
  let intervalMs: number;
  try {
    intervalMs = Number(parseDuration(values.interval) / 1_000_000n);
  } catch {
    intervalMs = NaN;
  }
  if (!(intervalMs >= 100 && intervalMs <= 3_600_000))
    throw new CommandError(`--interval takes a duration from 100ms to 1h, not "${values.interval}"`, 2);
  const count = values.count === undefined ? Infinity : Number(values.count);
  if (!(Number.isInteger(count) || count === Infinity) || count < 1)
    throw new CommandError(`--count takes a whole number of refreshes, not "${values.count}"`, 2);
  const base = agentApiUrl(values, loadConfig);

  let stopped = false;
  const stop = () => (stopped = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // Its reader gone (`ferry top | head`): done, not a crash.
  process.stdout.on('error', stop);
  try {
    let before = await snapshot(base);
    for (let shown = 0; shown < count && !stopped; shown++) {
      await new Promise((r) => setTimeout(r, intervalMs));
      if (stopped) break;
      const now = await snapshot(base);
      const table = render(before, now);
      const head = `ferry top: ${base}, ${new Date(now.at).toISOString()}, rates over ${((now.at - before.at) / 1000).toFixed(1)} s\n`;
      out(tty ? `\x1b[H\x1b[2J${head}${table}` : `${head}${table}\n`);
      before = now;
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    process.stdout.off('error', stop);
  }
}

interface Snapshot {
  at: number;
  rows: ComponentStats[];
}

async function snapshot(base: string): Promise<Snapshot> {
  let res: Response;
  let body: { components?: ComponentStats[]; message?: string };
  try {
    // An agent that does not answer in time is said, not waited for.
    res = await fetch(new URL('/components', base), { signal: AbortSignal.timeout(10_000) });
    body = (await res.json().catch(() => ({}))) as typeof body;
  } catch (err) {
    throw unreachable(base, err);
  }
  if (!res.ok || !Array.isArray(body.components))
    throw new CommandError(`the agent's API answered ${res.status}: ${body.message ?? 'no components'}`, 1);
  return { at: Date.now(), rows: body.components };
}

/** One row per component: rates over the time between the two snapshots (a component new since: none). */
export function render(before: Snapshot, now: Snapshot): string {
  const secs = Math.max(0.001, (now.at - before.at) / 1000);
  const prev = new Map(before.rows.map((r) => [`${r.kind}:${r.name}`, r]));
  const rate = (r: ComponentStats, key: 'eventsIn' | 'eventsOut' | 'dropped') => {
    const p = prev.get(`${r.kind}:${r.name}`);
    // Counters start over when the agent restarts: a fall is no negative rate.
    return p && r[key] >= p[key] ? Math.round((r[key] - p[key]) / secs) : null;
  };
  const fields = ['component', 'kind', 'type', 'in/s', 'out/s', 'dropped/s', 'errors', 'queue', 'lag', 'state'];
  const rows = now.rows.map((r) => [
    r.name,
    r.kind,
    r.type,
    rate(r, 'eventsIn'),
    rate(r, 'eventsOut'),
    rate(r, 'dropped'),
    r.errors,
    r.queueBatches ?? null,
    r.lagBytes ?? null,
    r.state ?? null,
  ]);
  return renderTable({
    name: 'components',
    fields: fields.map((name) => ({ name })),
    columns: fields.map((_, j) => rows.map((row) => row[j])),
  });
}
