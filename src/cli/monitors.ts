/**
 * `ferry monitors`: the monitors of a running service with their state and last run, and one monitor's
 * recent runs and alert history. Runs come from the runs dataset, read with APL like any data.
 */
import { parseArgs } from 'node:util';
import type { FerryConfig } from './config.js';
import { renderTable, type TabularTable } from './query-output.js';
import { callService, CommandError, ServiceCallError, type ServiceTarget, serviceTarget } from './service-client.js';

interface MonitorView {
  id: string;
  name: string;
  type: string;
  intervalMinutes: number;
  rangeMinutes: number;
  aplQuery: string;
  disabled: boolean;
  disabledUntil: string | null;
  notifierIds: string[];
}

type Row = Record<string, unknown>;

/**
 * Rows of an APL query; an absent runs dataset (no run yet) is no rows, and so is one the token may not
 * read (the runs of every monitor take query:read on every dataset and auditLog:read), said on stderr.
 */
async function aplRows(t: ServiceTarget, apl: string): Promise<Row[]> {
  const r = await callService<{ tables?: TabularTable[] }>(t, 'POST', '/v1/query/_apl?format=tabular', {
    apl,
    startTime: '1970-01-01T00:00:00Z',
    endTime: 'now+1d',
  });
  if (r.status === 404) return [];
  if (r.status === 403) {
    process.stderr.write(`ferry: runs not shown: ${r.json.message ?? r.text}\n`);
    return [];
  }
  if (!r.ok) throw new CommandError(`reading monitor runs failed (${r.status}): ${r.json.message ?? r.text}`, 1);
  const table = r.json.tables?.[0];
  if (!table) return [];
  return (table.columns[0] ?? []).map((_, i) =>
    Object.fromEntries(table.fields.map((f, j) => [f.name, table.columns[j]![i]])),
  );
}

function stateOf(m: MonitorView, last: Row | undefined, nowMs: number): string {
  if (m.disabledUntil && Date.parse(m.disabledUntil) > nowMs) return `paused until ${m.disabledUntil}`;
  if (!m.disabledUntil && m.disabled) return 'disabled';
  return (last?.state as string | undefined) ?? 'not run yet';
}

const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export async function monitorsCommand(
  argv: string[],
  loadConfig: (file?: string) => FerryConfig,
  out: (s: string) => void,
): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      config: { type: 'string', short: 'c' },
      runs: { type: 'string', default: '20' },
      'runs-dataset': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const cfg = loadConfig(values.config);
  const runsDataset = values['runs-dataset'] ?? cfg.service.monitors.runsDataset;
  const limit = Number(values.runs);
  if (!Number.isInteger(limit) || limit < 1)
    throw new CommandError(`--runs must be a whole number above 0, not "${values.runs}"`, 2);
  const [sub = 'list', id, ...extra] = positionals;
  if (extra.length) throw new CommandError(`unexpected ${extra.join(' ')} (try ferry monitors --help)`, 2);
  let target: ServiceTarget;
  try {
    target = serviceTarget(values, cfg);
  } catch (e) {
    throw new CommandError((e as Error).message, 2);
  }
  try {
    if (sub === 'list') {
      if (id) throw new CommandError(`list takes no argument (ferry monitors show ${id})`, 2);
      await list(target, runsDataset, out);
    } else if (sub === 'show') {
      if (!id) throw new CommandError('show needs a monitor id: ferry monitors show mon_…', 2);
      await show(target, runsDataset, id, limit, out);
    } else throw new CommandError(`unknown monitors command "${sub}" (list or show)`, 2);
  } catch (e) {
    if (e instanceof ServiceCallError) throw new CommandError(e.message, 1);
    throw e;
  }
}

async function list(t: ServiceTarget, runsDataset: string, out: (s: string) => void): Promise<void> {
  const r = await callService<MonitorView[]>(t, 'GET', '/v2/monitors');
  if (!r.ok) throw new CommandError(`listing monitors failed (${r.status}): ${r.json.message ?? r.text}`, 1);
  const monitors = r.json;
  const last = new Map<string, Row>();
  if (monitors.length) {
    // Fields a run leaves null are absent until some run sets them: every column, then picked by name.
    const rows = await aplRows(t, `[${quote(runsDataset)}] | summarize arg_max(_time, *) by monitorId`);
    for (const row of rows) last.set(row.monitorId as string, row);
  }
  const now = Date.now();
  const fields = ['id', 'name', 'type', 'every', 'state', 'last run', 'value', 'error'];
  const data = monitors.map((m) => {
    const l = last.get(m.id);
    return [
      m.id,
      m.name,
      m.type,
      `${m.intervalMinutes}m`,
      stateOf(m, l, now),
      (l?._time as string | undefined) ?? '',
      l?.value ?? null,
      (l?.error as string | undefined) ?? '',
    ];
  });
  out(
    renderTable({
      name: 'monitors',
      fields: fields.map((name) => ({ name })),
      columns: fields.map((_, j) => data.map((row) => row[j])),
    }),
  );
}

async function show(
  t: ServiceTarget,
  runsDataset: string,
  id: string,
  limit: number,
  out: (s: string) => void,
): Promise<void> {
  const r = await callService<MonitorView>(t, 'GET', `/v2/monitors/${encodeURIComponent(id)}`);
  if (!r.ok) throw new CommandError(`monitor ${id}: ${r.json.message ?? r.text} (${r.status})`, 1);
  const m = r.json;
  const runs = await aplRows(
    t,
    `[${quote(runsDataset)}] | where monitorId == ${quote(id)} | sort by _time desc | take ${limit}`,
  );
  const end = new Date(Date.now() + 60_000).toISOString();
  const start = new Date(Date.now() - 7 * 86_400_000).toISOString();
  const h = await callService<{ state: string; timestamp: string }[]>(
    t,
    'GET',
    `/v2/monitors/${encodeURIComponent(id)}/history?startTime=${start}&endTime=${end}`,
  );
  const history = h.ok ? h.json : [];
  out(
    `${m.name} (${m.id}), ${m.type}, every ${m.intervalMinutes}m over ${m.rangeMinutes}m: ${stateOf(m, runs[0], Date.now())}\n`,
  );
  out(`query: ${m.aplQuery}\n`);
  out(`notifiers: ${m.notifierIds.length ? m.notifierIds.join(', ') : 'none'}\n\n`);
  const fields = ['time', 'state', 'value', 'delay ms', 'took ms', 'rows', 'notified', 'failed', 'error'];
  const data = runs.map((x) => [
    x._time,
    x.state,
    x.value ?? null,
    x.delayMs ?? null,
    x.durationMs ?? null,
    x.rowsMatched ?? null,
    x.notified ?? null,
    x.notificationsFailed ?? null,
    (x.error ?? x.notificationError ?? '') as string,
  ]);
  out(
    `recent runs:\n${renderTable({ name: 'runs', fields: fields.map((name) => ({ name })), columns: fields.map((_, j) => data.map((row) => row[j])) })}`,
  );
  out(
    `\nalert changes (7 days): ${history.length ? history.map((e) => `${e.timestamp} ${e.state}`).join(', ') : 'none'}\n`,
  );
}
