/**
 * The budget of the text a query's calls may make for a batch of rows
 * (service.query_limits.max_made_text_bytes): the estimate (apl/binder/made-text.ts) over the longest
 * values of the columns it reads, looked up only when the estimate depends on them.
 */
import type { BoundStage } from '../../apl/binder/bound.js';
import { BATCH_ROWS, madeText, type LengthOf, type MadeText } from '../../apl/binder/made-text.js';
import { sizeText } from './js-budget.js';

/** Looks up the longest value (bytes) of a dataset's columns. */
export type LongestValues = (dataset: string, columns: string[]) => Promise<Map<string, number>>;

/** What a query that may make too much is told: the amount, the limit and its key, and the call that makes the most. */
export interface MadeTextExcess {
  message: string;
  /** Where in the query the call that may make the most is. */
  pos: number;
}

/** Lengths that stand for any: an estimate the same at both does not depend on the columns' lengths. */
const SHORT = 0;
const LONG = 2 ** 40;

/** What the budget says of a query: refused (the excess), or the bytes a row each counted call may make. */
export type MadeTextBudget = { excess: MadeTextExcess } | { rowShare?: number };

/**
 * The estimate of the text the stages may make for a batch of rows, against `limit`:
 * the excess when it passes it, else the largest row share within it for the calls whose value grows
 * with a count read from the rows (none when there are no such calls).
 */
export async function madeTextBudget(
  stages: BoundStage[],
  limit: number,
  longestValues: LongestValues,
): Promise<MadeTextBudget> {
  const total = (m: MadeText) => m.batch + m.once;
  const read = new Map<string, Set<string>>();
  const assuming = (bytes: number) =>
    madeText(stages, (dataset, column) => {
      let columns = read.get(dataset);
      if (!columns) read.set(dataset, (columns = new Set()));
      columns.add(column);
      return bytes;
    });
  let lengthOf: LengthOf = () => SHORT;
  let made = assuming(SHORT);
  // With calls counted at a row share, what they are joined to may depend on lengths the share hides.
  if (read.size > 0 && (made.shared.length > 0 || total(assuming(LONG)) !== total(made))) {
    const lengths = new Map(
      await Promise.all(
        [...read].map(async ([dataset, columns]) => [dataset, await longestValues(dataset, [...columns])] as const),
      ),
    );
    lengthOf = (dataset, column) => lengths.get(dataset)?.get(column) ?? 0;
    made = madeText(stages, lengthOf);
  }
  const bytes = total(made);
  if (bytes > limit) {
    const most = made.largest
      ? `; ${made.largest.fn}() here may add up to ${sizeText(made.largest.bytes)} to a row`
      : '';
    return {
      excess: {
        message: `the query may make up to ${sizeText(bytes)} of text for a batch of rows (DuckDB's ${BATCH_ROWS}), more than the ${sizeText(limit)} of service.query_limits.max_made_text_bytes${most}: make fewer or shorter texts a row (the estimate takes the longest value of each column read)`,
        pos: made.largest?.pos ?? 0,
      },
    };
  }
  if (made.shared.length === 0) return {};
  // The largest share within the limit: the estimate grows with it.
  let [low, high] = [0, limit - bytes];
  while (low < high) {
    const share = Math.ceil((low + high) / 2);
    if (total(madeText(stages, lengthOf, share)) <= limit) low = share;
    else high = share - 1;
  }
  return { rowShare: low };
}
