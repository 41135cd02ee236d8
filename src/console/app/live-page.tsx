/**
 * The live view: new events of a dataset as they arrive, filtered by an APL `where`, paused and resumed.
 * It asks every second for the events after the last one it showed (the query API's cursor, in `_time`
 * order), so a pause loses nothing: resuming catches up. Events are shown by their `_time`: one that
 * arrives with a time older than the last one shown is not in the view (query it on the query page).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { listDatasets, runQuery } from './api';
import { ErrorNote } from './error-note';

const POLL_MS = 1000;
/** Events kept on screen; older ones scroll away. */
const KEEP = 1000;
/** Events already in the dataset when the view opens: how far back it starts. */
const BACK_MS = 60_000;

interface LiveEvent {
  time: string;
  text: string;
}

export function LivePage() {
  const [datasets, setDatasets] = useState<string[]>([]);
  const [dataset, setDataset] = useState('');
  const [filter, setFilter] = useState('');
  const [applied, setApplied] = useState({ dataset: '', filter: '' });
  const [paused, setPaused] = useState(false);
  const [events, setEvents] = useState<LiveEvent[]>([]);
  const [error, setError] = useState<string>();
  const list = useRef<HTMLDivElement>(null);

  useEffect(() => {
    void listDatasets()
      .then((l) => {
        const names = l.map((d) => d.name);
        setDatasets(names);
        if (names[0]) {
          setDataset(names[0]);
          setApplied({ dataset: names[0], filter: '' });
        }
      })
      .catch((e: Error) => setError(e.message));
  }, []);

  // One follower per dataset and filter: a new one starts afresh; a pause stops asking, and resuming goes
  // on from where it stopped.
  const cursor = useRef<{ key: string; cursor?: string; since: string }>();
  useEffect(() => {
    if (!applied.dataset || paused) return;
    const key = `${applied.dataset}\n${applied.filter}`;
    if (cursor.current?.key !== key) {
      cursor.current = { key, since: new Date(Date.now() - BACK_MS).toISOString() };
      setEvents([]);
    }
    const apl = `['${applied.dataset.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']${applied.filter.trim() ? ` | where ${applied.filter}` : ''} | sort by _time asc`;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      const c = cursor.current!;
      try {
        // Up to a minute ahead: a sender's clock a little ahead of this one still shows.
        const range = { startTime: c.since, endTime: new Date(Date.now() + 60_000).toISOString() };
        const r = await runQuery(apl, range, abort.signal, { limit: KEEP, ...(c.cursor ? { cursor: c.cursor } : {}) });
        const t = r.tables[0];
        const rows = t?.columns[0]?.length ?? 0;
        if (t && rows > 0) {
          const timeAt = t.fields.findIndex((f) => f.name === '_time');
          const fresh: LiveEvent[] = [];
          for (let i = 0; i < rows; i++) {
            const event: Record<string, unknown> = {};
            t.fields.forEach((f, c) => f.name !== '_time' && (event[f.name] = t.columns[c]?.[i]));
            fresh.push({ time: String(t.columns[timeAt]?.[i] ?? ''), text: JSON.stringify(event) });
          }
          c.cursor = r.status.maxCursor ?? c.cursor;
          setEvents((old) => [...old, ...fresh].slice(-KEEP));
        }
        setError(undefined);
      } catch (e) {
        if (abort.signal.aborted) return;
        setError((e as Error).message);
      }
      if (!abort.signal.aborted) timer = setTimeout(() => void poll(), POLL_MS);
    };
    void poll();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, [applied, paused]);

  // The newest in view, unless the user scrolled up to read.
  useEffect(() => {
    const el = list.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [events]);

  return (
    <section class="live-page">
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ dataset, filter });
        }}
      >
        <select
          aria-label="Dataset"
          data-testid="live-dataset"
          value={dataset}
          onChange={(e) => setDataset((e.currentTarget as HTMLSelectElement).value)}
        >
          {datasets.map((d) => (
            <option value={d}>{d}</option>
          ))}
        </select>
        <span class="where">where</span>
        <input
          class="filter"
          data-testid="live-filter"
          aria-label="Filter (an APL where)"
          placeholder="status >= 500 and path startswith '/api'"
          value={filter}
          onInput={(e) => setFilter((e.currentTarget as HTMLInputElement).value)}
        />
        <button type="submit" data-testid="live-apply">
          Apply
        </button>
        <button type="button" data-testid="live-pause" onClick={() => setPaused(!paused)}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        <span class="status" data-testid="live-status">
          {paused ? 'Paused' : 'Live'} · {events.length.toLocaleString('en')} events
        </span>
      </form>
      <ErrorNote message={error} testid="live-error" />
      <div class="live-list" ref={list} data-testid="live-list">
        {events.map((e) => (
          <div class="live-event">
            <span class="time">{e.time}</span> <span class="text">{e.text}</span>
          </div>
        ))}
      </div>
    </section>
  );
}
