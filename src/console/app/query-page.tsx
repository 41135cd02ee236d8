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
import { decodeShared, encodeShared } from './share';
import { RELATIVE_RANGES, resolveRange, type TimeRange } from './time-range';

type Run =
  | { state: 'idle' }
  | { state: 'running'; started: number; abort: AbortController }
  | { state: 'done'; result: TabularResult; ms: number }
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
      const result = await runQuery(text, resolveRange(r), abort.signal);
      if (running.current === abort) setRun({ state: 'done', result, ms: performance.now() - started });
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

  const zoom = (from: Date, to: Date) => {
    const r: TimeRange = { start: from.toISOString(), end: to.toISOString() };
    setRange(r);
    void start(undefined, r);
  };

  const main = run.state === 'done' ? run.result.tables[0] : undefined;
  return (
    <section class="query-page">
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
          {run.state === 'done' && run.result.status.isPartial && ' · partial'}
        </span>
      </div>
      {run.state === 'failed' && (
        <div class="error" role="alert" data-testid="error">
          {run.message}
        </div>
      )}
      {main && <ResultChart table={main} onZoom={zoom} />}
      {main && <ResultTable table={main} />}
    </section>
  );
}
