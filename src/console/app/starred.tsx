/**
 * Starred queries on the query page: the caller's saved queries (the service's /v2/apl-starred-queries),
 * one click to load and run one, and the query in the editor saved under a name with its time range.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from './api';
import type { TimeRange } from './time-range';
import { ErrorNote } from './error-note';

export interface StarredQuery {
  id: string;
  name: string;
  query: { apl: string; startTime?: string; endTime?: string };
}

/** A range as a starred query keeps it: a relative one as Axiom's `now-1h`, so it stays relative. */
export function savedRange(r: TimeRange): { startTime: string; endTime: string } {
  return 'last' in r ? { startTime: `now-${r.last}`, endTime: 'now' } : { startTime: r.start, endTime: r.end };
}

export function rangeOfSaved(q: StarredQuery['query']): TimeRange {
  const rel = /^now-(\w+)$/.exec(q.startTime ?? '');
  if (rel && (q.endTime ?? 'now') === 'now') return { last: rel[1]! };
  if (q.startTime && q.endTime) return { start: q.startTime, end: q.endTime };
  return { last: '1h' };
}

export function Starred(p: { current(): { apl: string; range: TimeRange }; onPick(q: StarredQuery): void }) {
  const [list, setList] = useState<StarredQuery[]>([]);
  const [name, setName] = useState('');
  const [error, setError] = useState<string>();
  const [saved, setSaved] = useState<string>();
  const load = () =>
    api<StarredQuery[]>('GET', '/v2/apl-starred-queries?limit=1000')
      .then((l) => setList(l.filter((q) => typeof q.query?.apl === 'string')))
      .catch((e: Error) => setError(e.message));
  useEffect(() => void load(), []);

  const save = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setSaved(undefined);
    const { apl, range } = p.current();
    try {
      await api('POST', '/v2/apl-starred-queries', {
        kind: 'apl',
        name: name.trim(),
        query: { apl, ...savedRange(range) },
      });
      setSaved(name.trim());
      setName('');
      await load();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <details class="starred" data-testid="starred">
      <summary>Starred queries ({list.length})</summary>
      <ul>
        {list.map((q) => (
          <li>
            <button class="link" data-testid="starred-item" title={q.query.apl} onClick={() => p.onPick(q)}>
              {q.name}
            </button>
            <code>{q.query.apl}</code>
          </li>
        ))}
      </ul>
      <form onSubmit={(e) => void save(e)}>
        <input
          aria-label="Name"
          data-testid="starred-name"
          placeholder="Save the query above as…"
          value={name}
          onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)}
        />
        <button type="submit" data-testid="starred-save" disabled={!name.trim()}>
          Save
        </button>
        {saved && <span class="saved">Saved “{saved}”</span>}
      </form>
      <ErrorNote message={error} testid="starred-error" />
    </details>
  );
}
