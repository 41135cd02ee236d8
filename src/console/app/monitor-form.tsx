/**
 * Create or edit a monitor. The service judges the body: its 400 message names the field at fault
 * ("operator is required for a Threshold monitor…"), which the form marks and shows beside that field.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, listNotifiers, type Monitor } from './api';
import { type Draft, draftOf, EMPTY, fieldOfMessage, monitorBody, OPERATORS, TYPES } from './monitor-body';
import { ErrorNote } from './error-note';

export function MonitorForm(p: { monitor?: Monitor; onSaved(m: Monitor): void; onCancel(): void }) {
  const [draft, setDraft] = useState<Draft>(p.monitor ? draftOf(p.monitor) : { ...EMPTY });
  const [problem, setProblem] = useState<{ message: string; field?: string }>();
  const [saving, setSaving] = useState(false);
  const [notifiers, setNotifiers] = useState<{ id: string; name: string }[]>();
  const [notifierError, setNotifierError] = useState<string>();
  useEffect(() => {
    listNotifiers()
      .then(setNotifiers)
      .catch((e: Error) => setNotifierError(e.message));
  }, []);

  const set = (k: string, v: string | boolean | string[]) => setDraft((d) => ({ ...d, [k]: v }));
  const save = async (e: Event) => {
    e.preventDefault();
    setSaving(true);
    setProblem(undefined);
    try {
      const body = monitorBody(p.monitor, draft);
      const saved = p.monitor
        ? await api<Monitor>('PUT', `/v2/monitors/${encodeURIComponent(p.monitor.id)}`, body)
        : await api<Monitor>('POST', '/v2/monitors', body);
      p.onSaved(saved);
    } catch (err) {
      const message = (err as Error).message;
      setProblem({
        message,
        field: err instanceof ApiError && err.status === 400 ? fieldOfMessage(message) : undefined,
      });
    } finally {
      setSaving(false);
    }
  };

  const type = String(draft.type);
  // A monitor of metrics is edited through its MPL query; a new one is written in APL.
  const queryField = p.monitor?.mplQuery ? 'mplQuery' : 'aplQuery';
  const field = (k: string, label: string, input: preact.JSX.Element) => (
    <div class={`field ${problem?.field === k ? 'invalid' : ''}`} data-field={k}>
      <span class="label">{label}</span>
      {input}
      {problem?.field === k && (
        <span class="field-error" data-testid="field-error">
          {problem.message}
        </span>
      )}
    </div>
  );
  const text = (k: string, label: string, o: { number?: boolean } = {}) =>
    field(
      k,
      label,
      <input
        name={k}
        aria-label={label}
        type={o.number ? 'number' : 'text'}
        step="any"
        aria-invalid={problem?.field === k}
        value={String(draft[k])}
        onInput={(e) => set(k, (e.currentTarget as HTMLInputElement).value)}
      />,
    );
  const check = (k: string, label: string) => (
    <label class="check">
      <input
        type="checkbox"
        name={k}
        checked={Boolean(draft[k])}
        onChange={(e) => set(k, (e.currentTarget as HTMLInputElement).checked)}
      />{' '}
      {label}
    </label>
  );
  const chosen = draft.notifierIds as string[];

  return (
    <form class="panel monitor-form" data-testid="monitor-form" onSubmit={(e) => void save(e)}>
      <h2>{p.monitor ? `Edit ${p.monitor.name}` : 'New monitor'}</h2>
      {text('name', 'Name')}
      {text('description', 'Description')}
      {field(
        'type',
        'Type',
        <select
          name="type"
          aria-label="Type"
          value={type}
          onChange={(e) => set('type', (e.currentTarget as HTMLSelectElement).value)}
        >
          {TYPES.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>,
      )}
      {field(
        queryField,
        queryField === 'mplQuery' ? 'MPL query' : 'APL query',
        <textarea
          name={queryField}
          aria-label={queryField === 'mplQuery' ? 'MPL query' : 'APL query'}
          rows={3}
          aria-invalid={problem?.field === queryField}
          value={String(draft[queryField])}
          onInput={(e) => set(queryField, (e.currentTarget as HTMLTextAreaElement).value)}
        />,
      )}
      {type !== 'MatchEvent' &&
        field(
          'operator',
          'Operator',
          <select
            name="operator"
            aria-label="Operator"
            aria-invalid={problem?.field === 'operator'}
            value={String(draft.operator)}
            onChange={(e) => set('operator', (e.currentTarget as HTMLSelectElement).value)}
          >
            <option value="">(none)</option>
            {OPERATORS.map((o) => (
              <option value={o}>{o}</option>
            ))}
          </select>,
        )}
      {type !== 'MatchEvent' && text('threshold', 'Threshold', { number: true })}
      {type !== 'MatchEvent' && text('columnName', 'Column (empty: the first number)')}
      {text('intervalMinutes', 'Every (minutes)', { number: true })}
      {text('rangeMinutes', 'Over the last (minutes)', { number: true })}
      {type !== 'MatchEvent' && text('triggerFromNRuns', 'Of the last N runs', { number: true })}
      {type !== 'MatchEvent' && text('triggerAfterNPositiveResults', 'Open after M positive', { number: true })}
      {type === 'AnomalyDetection' && text('compareDays', 'Compare with days', { number: true })}
      {type === 'AnomalyDetection' && text('tolerance', 'Tolerance (%)', { number: true })}
      <div class="checks">
        {type !== 'MatchEvent' && check('alertOnNoData', 'Alert on no data')}
        {type !== 'MatchEvent' && check('notifyByGroup', 'Notify by group')}
        {type !== 'MatchEvent' && check('notifyEveryRun', 'Notify every run')}
        {type !== 'MatchEvent' && check('skipResolved', 'No notice when resolved')}
        {check('disabled', 'Disabled')}
        {p.monitor?.disabledUntil && Date.parse(p.monitor.disabledUntil) > Date.now() && (
          <span class="muted">snoozed until {p.monitor.disabledUntil.slice(0, 16).replace('T', ' ')} UTC</span>
        )}
      </div>
      {field(
        'notifierIds',
        'Notifiers',
        notifiers ? (
          <span class="checks">
            {notifiers.length === 0 && <span class="muted">none defined</span>}
            {notifiers.map((n) => (
              <label class="check">
                <input
                  type="checkbox"
                  checked={chosen.includes(n.id)}
                  onChange={(e) =>
                    set(
                      'notifierIds',
                      (e.currentTarget as HTMLInputElement).checked
                        ? [...chosen, n.id]
                        : chosen.filter((x) => x !== n.id),
                    )
                  }
                />{' '}
                {n.name}
              </label>
            ))}
          </span>
        ) : (
          <span class="muted">{notifierError ? `cannot list notifiers: ${notifierError}` : '…'}</span>
        ),
      )}
      <ErrorNote message={problem && !problem.field ? problem.message : undefined} testid="form-error" />
      <div class="toolbar">
        <button type="submit" class="run" data-testid="monitor-save" disabled={saving}>
          {p.monitor ? 'Save' : 'Create'}
        </button>
        <button type="button" onClick={p.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
