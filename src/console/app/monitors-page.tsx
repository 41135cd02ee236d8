/**
 * The monitors page: each monitor the token can see with its state, last run and a timeline of its recent
 * runs and alerts (/v2/monitors/{id}/runs and /history), and the forms to create and edit one.
 */
import { useEffect, useState } from 'preact/hooks';
import { type AlertChange, listMonitors, type Monitor, monitorHistory, type MonitorRun, monitorRuns } from './api';
import { formatDuration } from './format';
import { MonitorForm } from './monitor-form';
import { layoutTimeline, monitorState } from './timeline';
import { ErrorNote } from './error-note';

/** A timeline shows about 60 runs: an hour of a monitor run every minute, a day at most. */
export const timelineSpanMs = (intervalMinutes: number) =>
  Math.min(24 * 3600_000, Math.max(3600_000, intervalMinutes * 60 * 60_000));

interface Seen {
  start: Date;
  end: Date;
  runs?: MonitorRun[];
  history?: AlertChange[];
  error?: string;
}

export function MonitorsPage() {
  const [monitors, setMonitors] = useState<Monitor[]>();
  const [seen, setSeen] = useState<Record<string, Seen>>({});
  const [error, setError] = useState<string>();
  const [editing, setEditing] = useState<Monitor | 'new'>();

  const load = async () => {
    setError(undefined);
    const end = new Date();
    try {
      const list = await listMonitors();
      setMonitors(list);
      const next: Record<string, Seen> = {};
      await Promise.all(
        list.map(async (m) => {
          const start = new Date(end.getTime() - timelineSpanMs(m.intervalMinutes));
          try {
            const [runs, history] = await Promise.all([
              monitorRuns(m.id, start, end),
              monitorHistory(m.id, start, end),
            ]);
            next[m.id] = { start, end, runs, history };
          } catch (e) {
            next[m.id] = { start, end, error: (e as Error).message };
          }
        }),
      );
      setSeen(next);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  useEffect(() => void load(), []);

  if (editing)
    return (
      <section class="monitors-page">
        <MonitorForm
          monitor={editing === 'new' ? undefined : editing}
          onSaved={() => {
            setEditing(undefined);
            void load();
          }}
          onCancel={() => setEditing(undefined)}
        />
      </section>
    );

  return (
    <section class="monitors-page">
      <div class="toolbar">
        <strong>Monitors</strong>
        <span class="status">{monitors ? `${monitors.length} monitors` : 'Loading…'}</span>
        <button type="button" onClick={() => void load()} data-testid="monitors-refresh">
          Refresh
        </button>
        <button type="button" class="run" onClick={() => setEditing('new')} data-testid="monitor-new">
          New monitor
        </button>
      </div>
      <ErrorNote message={error} />
      <table class="grid" data-testid="monitors">
        <thead>
          <tr>
            <th>Name</th>
            <th>Type</th>
            <th>State</th>
            <th>Last run</th>
            <th>Runs and alerts</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(monitors ?? []).map((m) => {
            const s = seen[m.id];
            const last = s?.runs?.[0];
            const state = monitorState(m, last, Date.now());
            const line = s?.runs && s.history && layoutTimeline(s.runs, s.history, s.start, s.end);
            const open = line?.alerts.some((a) => a.open);
            return (
              <tr data-testid="monitor-row" data-id={m.id}>
                <td>
                  <strong>{m.name}</strong>
                  <div class="muted mono" title={m.aplQuery || m.mplQuery}>
                    {m.aplQuery || m.mplQuery}
                  </div>
                </td>
                <td>
                  {m.type}
                  <div class="muted">
                    every {formatDuration(m.intervalMinutes * 60_000)} over {formatDuration(m.rangeMinutes * 60_000)}
                  </div>
                </td>
                <td>
                  <span class={`badge ${state.replace(/\s/g, '-')}`} data-testid="monitor-state">
                    {state}
                  </span>
                  {open && (
                    <span class="badge alert" data-testid="monitor-alert">
                      alert open
                    </span>
                  )}
                </td>
                <td data-testid="monitor-last-run">
                  {last ? (
                    <>
                      {last._time.slice(0, 19).replace('T', ' ')}
                      <div class="muted">
                        {last.value === null || last.value === undefined ? '' : `value ${last.value} · `}
                        {last.durationMs} ms
                      </div>
                      {last.error && <div class="bad">{last.error}</div>}
                    </>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td class="timeline-cell">
                  {s?.error ? (
                    <span class="muted">{s.error}</span>
                  ) : line && s ? (
                    <>
                      <svg
                        class="timeline"
                        viewBox="0 0 1000 24"
                        preserveAspectRatio="none"
                        data-testid="monitor-timeline"
                        data-runs={line.runs.length}
                        data-alerts={line.alerts.length}
                      >
                        {line.alerts.map((a) => (
                          <rect
                            class={`alert-band ${a.open ? 'open' : ''}`}
                            x={a.from * 1000}
                            width={Math.max(2, (a.to - a.from) * 1000)}
                            y={0}
                            height={24}
                          >
                            <title>{a.open ? 'alert open' : 'alert'}</title>
                          </rect>
                        ))}
                        {line.runs.map((r) => (
                          <rect
                            class={`run ${r.state.replace(/\s/g, '-')}`}
                            x={r.at * 1000 - 1}
                            width={2}
                            y={6}
                            height={12}
                          >
                            <title>{r.title}</title>
                          </rect>
                        ))}
                      </svg>
                      <div class="timeline-axis muted">
                        <span>{s.start.toISOString().slice(11, 16)}</span>
                        <span>last {formatDuration(s.end.getTime() - s.start.getTime())}</span>
                        <span>{s.end.toISOString().slice(11, 16)} UTC</span>
                      </div>
                    </>
                  ) : (
                    '…'
                  )}
                </td>
                <td>
                  <button type="button" data-testid="monitor-edit" onClick={() => setEditing(m)}>
                    Edit
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {monitors?.length === 0 && <p class="muted">No monitors yet.</p>}
    </section>
  );
}
