/**
 * The query page: the APL editor, a time range, Run and Cancel, the result's status (running time, rows
 * matched), its chart when it is binned by time, and its rows. The query and range live in the URL's
 * fragment, so the address bar is a link to share (it never holds the token).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, datasetFields, listDatasets, runQuery, type TabularResult } from './api';
import { createAplEditor, type AplEditor } from './editor';
import { ResultChart } from './result-chart';
import { ResultTable } from './result-table';
import { rangeOfSaved, Starred } from './starred';
import { decodeShared, encodeShared } from './share';
import { RELATIVE_RANGES, resolveRange, type TimeRange } from './time-range';
import { ErrorNote } from './error-note';

/** Rows asked for at a time; more are fetched as the table is scrolled to its end. */
const PAGE_ROWS = 10_000;

/** Where the next page starts, while the last page came full. */
interface NextPage {
  apl: string;
  range: { startTime: string; endTime: string };
  cursor: string;
}

type Run =
  | { state: 'idle' }
  | { state: 'running'; started: number; abort: AbortController }
  | { state: 'done'; result: TabularResult; ms: number; next?: NextPage; paging?: string }
  | { state: 'failed'; message: string; status: number }
  | { state: 'cancelled' };

const toLocalInput = (iso: string) => {
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

export function QueryPage() {
  const shared = decodeShared(location.hash);
  const [apl, setApl] = useState(shared?.apl ?? '');
  const [range, setRange] = useState<TimeRange>(shared?.range ?? { last: '1h' });
  const [run, setRun] = useState<Run>({ state: 'idle' });
  const running = useRef<AbortController>();
  const paging = useRef(false);

  const editorHost = useRef<HTMLDivElement>(null);
  const editor = useRef<AplEditor>();
  const startRef = useRef<() => void>(() => undefined);

  useEffect(() => {
    let datasets: Promise<string[]> | undefined;
    const fields = new Map<string, Promise<{ name: string; type: string }[]>>();
    const e = createAplEditor(editorHost.current!, {
      text: apl,
      onChange: setApl,
      onRun: () => startRef.current(),
      sources: {
        datasets: () => (datasets ??= listDatasets().then((l) => l.map((d) => d.name))),
        fields: (ds: string) => {
          let f = fields.get(ds);
          if (!f) fields.set(ds, (f = datasetFields(ds)));
          return f;
        },
      },
    });
    editor.current = e;
    return () => e.destroy();
  }, []);

  const start = async (text = editor.current?.text() ?? apl, r = range) => {
    running.current?.abort();
    editor.current?.showError(undefined);
    const abort = new AbortController();
    running.current = abort;
    history.replaceState(null, '', encodeShared({ apl: text, range: r }));
    const started = performance.now();
    setRun({ state: 'running', started, abort });
    try {
      const resolved = resolveRange(r);
      const result = await runQuery(text, resolved, abort.signal, { limit: PAGE_ROWS });
      if (running.current === abort)
        setRun({ state: 'done', result, ms: performance.now() - started, next: nextPage(text, resolved, result) });
    } catch (e) {
      if (running.current !== abort) return;
      if (abort.signal.aborted) setRun({ state: 'cancelled' });
      else {
        const message = (e as Error).message;
        setRun({ state: 'failed', message, status: e instanceof ApiError ? e.status : 0 });
        editor.current?.showError(message);
      }
    }
  };

  startRef.current = () => void start();

  /** The next page of events, appended to the rows (the table was scrolled to its end). */
  const loadMore = async () => {
    if (run.state !== 'done' || !run.next || paging.current) return;
    const { next, result } = run;
    const abort = running.current!;
    paging.current = true;
    try {
      const page = await runQuery(next.apl, next.range, abort.signal, { limit: PAGE_ROWS, cursor: next.cursor });
      if (running.current !== abort) return;
      const [have, got] = [result.tables[0]!, page.tables[0]];
      const merged = got ? { ...have, columns: have.columns.map((c, i) => c.concat(got.columns[i] ?? [])) } : have;
      setRun({
        ...run,
        result: { ...result, tables: [merged, ...result.tables.slice(1)] },
        next: nextPage(next.apl, next.range, page),
      });
    } catch (e) {
      // A result that is not events in time order cannot be paged: said, and the rows so far stay.
      if (running.current === abort) setRun({ ...run, next: undefined, paging: (e as Error).message });
    } finally {
      paging.current = false;
    }
  };

  const zoom = (from: Date, to: Date) => {
    const r: TimeRange = { start: from.toISOString(), end: to.toISOString() };
    setRange(r);
    void start(undefined, r);
  };

  const main = run.state === 'done' ? run.result.tables[0] : undefined;
  return (
    <section class="query-page">
      <Starred
        current={() => ({ apl: editor.current?.text() ?? apl, range })}
        onPick={(q) => {
          const r = rangeOfSaved(q.query);
          editor.current?.setText(q.query.apl);
          setRange(r);
          void start(q.query.apl, r);
        }}
      />
      <div class="editor" ref={editorHost} />
      <div class="toolbar">
        <select
          aria-label="Time range"
          data-testid="range"
          value={'last' in range ? range.last : 'custom'}
          onChange={(e) => {
            const v = (e.currentTarget as HTMLSelectElement).value;
            if (v === 'custom') {
              const now = resolveRange(range);
              setRange({ start: now.startTime, end: now.endTime });
            } else setRange({ last: v });
          }}
        >
          {RELATIVE_RANGES.map((r) => (
            <option value={r.last}>{r.label}</option>
          ))}
          <option value="custom">Between…</option>
        </select>
        {'start' in range && (
          <span class="absolute">
            {(['start', 'end'] as const).map((end) => (
              <input
                type="datetime-local"
                aria-label={end === 'start' ? 'From' : 'To'}
                value={toLocalInput(range[end])}
                onChange={(e) =>
                  setRange({ ...range, [end]: new Date((e.currentTarget as HTMLInputElement).value).toISOString() })
                }
              />
            ))}
          </span>
        )}
        {run.state === 'running' ? (
          <button class="cancel" data-testid="cancel" onClick={() => run.abort.abort()}>
            Cancel
          </button>
        ) : (
          <button class="run" data-testid="run" disabled={!apl.trim()} onClick={() => void start()}>
            Run
          </button>
        )}
        <span class="status" data-testid="status">
          {run.state === 'running' && 'Running…'}
          {run.state === 'cancelled' && 'Cancelled'}
          {run.state === 'done' &&
            `${run.result.status.rowsMatched.toLocaleString('en')} rows matched · ${(main?.columns[0]?.length ?? 0).toLocaleString('en')} rows · ${Math.round(run.ms)} ms`}
          {run.state === 'done' && run.next && ' · more as you scroll'}
          {run.state === 'done' && run.result.status.isPartial && ' · partial'}
        </span>
      </div>
      <ErrorNote message={run.state === 'failed' ? run.message : undefined} testid="error" />
      {main && <ResultChart table={main} onZoom={zoom} />}
      {run.state === 'done' && run.paging && (
        <div class="note" data-testid="paging-note">
          More rows than one page ({PAGE_ROWS.toLocaleString('en')}), and no more can be fetched: {run.paging}
        </div>
      )}
      {main && <ResultTable table={main} onEnd={() => void loadMore()} />}
    </section>
  );
}

/**
 * The page after `result`, when it came full: events go on from the cursor of its last row, in the
 * result's order (by _time, newest first unless the query sorts ascending).
 */
function nextPage(
  apl: string,
  range: { startTime: string; endTime: string },
  result: TabularResult,
): NextPage | undefined {
  const t = result.tables[0];
  if (!t || (t.columns[0]?.length ?? 0) < PAGE_ROWS) return undefined;
  const first = t.order?.[0];
  const asc = first?.field === '_time' && !first.desc;
  const cursor = asc ? result.status.maxCursor : result.status.minCursor;
  return cursor ? { apl, range, cursor } : undefined;
}
