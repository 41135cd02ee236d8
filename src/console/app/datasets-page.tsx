/**
 * The datasets page: every dataset the token can see, with its events, size on disk, bytes received,
 * time span and retention (GET /v1/datasets/{id}/info), and a dataset's fields with their types.
 * A dataset the token sees but may not query shows why its figures are missing.
 */
import { useEffect, useState } from 'preact/hooks';
import { datasetInfo, type DatasetInfo, type DatasetSummary, listDatasetSummaries } from './api';
import { formatBytes, formatCount, formatRetention, formatSpan } from './format';
import { encodeShared } from './share';
import { ErrorNote } from './error-note';

interface Row {
  dataset: DatasetSummary;
  info?: DatasetInfo;
  error?: string;
}

/** Info requests in flight at once: a host with hundreds of datasets does not queue them all on the service. */
const PARALLEL = 4;

export function DatasetsPage() {
  const [rows, setRows] = useState<Row[]>();
  const [error, setError] = useState<string>();
  const [open, setOpen] = useState<string>();

  const load = async () => {
    setError(undefined);
    try {
      const list = await listDatasetSummaries();
      const found: Row[] = list.map((dataset) => ({ dataset }));
      setRows([...found]);
      let next = 0;
      const worker = async () => {
        while (next < found.length) {
          const i = next++;
          try {
            found[i] = { ...found[i]!, info: await datasetInfo(found[i]!.dataset.name) };
          } catch (e) {
            found[i] = { ...found[i]!, error: (e as Error).message };
          }
          setRows([...found]);
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
    } catch (e) {
      setError((e as Error).message);
    }
  };
  useEffect(() => void load(), []);

  const chosen = rows?.find((r) => r.dataset.name === open);
  return (
    <section class="datasets-page">
      <div class="toolbar">
        <strong>Datasets</strong>
        <span class="status">{rows ? `${rows.length} datasets` : 'Loading…'}</span>
        <button type="button" data-testid="datasets-refresh" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      <ErrorNote message={error} />
      <table class="grid" data-testid="datasets">
        <thead>
          <tr>
            <th>Name</th>
            <th class="num">Events</th>
            <th class="num">On disk</th>
            <th class="num">Received</th>
            <th>Time span</th>
            <th>Retention</th>
            <th>Kind</th>
          </tr>
        </thead>
        <tbody>
          {(rows ?? []).map(({ dataset: d, info, error: why }) => (
            <tr
              class={open === d.name ? 'chosen' : ''}
              data-testid="dataset-row"
              data-name={d.name}
              onClick={() => setOpen(open === d.name ? undefined : d.name)}
            >
              <td>
                <button class="link" data-testid="dataset-name">
                  {d.name}
                </button>
                {d.description && <div class="muted">{d.description}</div>}
              </td>
              {info ? (
                <>
                  <td class="num" data-testid="dataset-events">
                    {formatCount(info.numEvents)}
                  </td>
                  <td class="num" data-testid="dataset-size">
                    {formatBytes(info.compressedBytes)}
                  </td>
                  <td class="num">{formatBytes(info.inputBytes)}</td>
                  <td data-testid="dataset-span">{formatSpan(info.minTime, info.maxTime) || 'no events'}</td>
                </>
              ) : (
                <td colSpan={4} class="muted" data-testid="dataset-missing">
                  {why ?? '…'}
                </td>
              )}
              <td>{formatRetention(d)}</td>
              <td class="muted">{d.kind}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {chosen?.info && (
        <div class="panel" data-testid="dataset-fields">
          <div class="toolbar">
            <strong>{chosen.dataset.name}</strong>
            <span class="status">{chosen.info.numFields} fields</span>
            <a href={encodeShared({ apl: `['${chosen.dataset.name.replace(/'/g, "\\'")}']`, range: { last: '1h' } })}>
              Query it
            </a>
          </div>
          <table class="grid">
            <thead>
              <tr>
                <th>Field</th>
                <th>Type</th>
                <th>Unit</th>
                <th>Description</th>
              </tr>
            </thead>
            <tbody>
              {chosen.info.fields.map((f) => (
                <tr data-testid="field-row" class={f.hidden ? 'muted' : ''}>
                  <td>
                    <code>{f.name}</code>
                  </td>
                  <td data-testid="field-type">{f.type}</td>
                  <td>{f.unit}</td>
                  <td>{f.description}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
