/**
 * A result's rows, virtualised: only the rows in view (and a few around) are in the page, so 100,000 rows
 * scroll as smoothly as ten; `onEnd` is told when the end comes near (the page fetches more). Columns are typed (numbers right-aligned, times as ISO text); an object or
 * array cell opens in full below the table, and any cell's value can be copied.
 */
import { useMemo, useState } from 'preact/hooks';
import type { TabularTable } from './api';

const ROW_HEIGHT = 26;
const OVERSCAN = 10;
const VIEW_HEIGHT = 420;

function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function ResultTable({ table, onEnd }: { table: TabularTable; onEnd?: () => void }) {
  const [top, setTop] = useState(0);
  const [open, setOpen] = useState<{ field: string; value: unknown } | undefined>();
  const rows = table.columns[0]?.length ?? 0;
  const numeric = useMemo(() => table.fields.map((f) => /^(integer|float|long|real|int|double)/.test(f.type)), [table]);
  const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(rows, Math.ceil((top + VIEW_HEIGHT) / ROW_HEIGHT) + OVERSCAN);
  const template = `repeat(${table.fields.length}, minmax(8rem, 1fr))`;
  const shown = [];
  for (let r = first; r < last; r++) {
    shown.push(
      <div
        class="row"
        role="row"
        data-row={r}
        style={{ top: `${r * ROW_HEIGHT}px`, gridTemplateColumns: template }}
        key={r}
      >
        {table.fields.map((f, c) => {
          const v = table.columns[c]?.[r];
          const text = cellText(v);
          return (
            <div
              class={`cell${numeric[c] ? ' num' : ''}${typeof v === 'object' && v !== null ? ' json' : ''}`}
              role="cell"
              title={text}
              onClick={() => setOpen({ field: f.name, value: v })}
            >
              {text}
            </div>
          );
        })}
      </div>,
    );
  }
  return (
    <div class="result-table">
      <div class="row head" role="row" style={{ gridTemplateColumns: template }}>
        {table.fields.map((f) => (
          <div class="cell" role="columnheader" title={f.type}>
            {f.name} <span class="type">{f.type}</span>
          </div>
        ))}
      </div>
      <div
        class="viewport"
        data-testid="result-viewport"
        style={{ height: `${Math.min(VIEW_HEIGHT, rows * ROW_HEIGHT + 2)}px` }}
        onScroll={(e) => {
          const el = e.currentTarget as HTMLDivElement;
          setTop(el.scrollTop);
          // Near the end: the next page is fetched before it is reached.
          if (onEnd && el.scrollTop + el.clientHeight >= el.scrollHeight - 20 * ROW_HEIGHT) onEnd();
        }}
      >
        <div class="spacer" style={{ height: `${rows * ROW_HEIGHT}px` }}>
          {shown}
        </div>
      </div>
      {open && (
        <div class="cell-detail" data-testid="cell-detail">
          <div class="bar">
            <strong>{open.field}</strong>
            <button onClick={() => void navigator.clipboard?.writeText(cellText(open.value))}>Copy value</button>
            <button onClick={() => setOpen(undefined)}>Close</button>
          </div>
          <pre>
            {typeof open.value === 'object' && open.value !== null
              ? JSON.stringify(open.value, null, 2)
              : cellText(open.value)}
          </pre>
        </div>
      )}
    </div>
  );
}
