/**
 * Functions and aggregations of Axiom's APL that Ferry does not run. A query naming one is refused with
 * this reason instead of "unknown function", so the user knows the name is right and why it fails here.
 */
import { lookupTable } from '../../util/lookup.js';
export const UNSUPPORTED_FUNCTIONS: Record<string, { kind: 'function' | 'aggregation'; why?: string }> = lookupTable({
  externaldata: { kind: 'function', why: 'Ferry does not fetch URLs while querying' },
  parse_sql: { kind: 'function', why: 'Ferry does not parse SQL statements' },
  format_sql: { kind: 'function', why: 'Ferry does not parse SQL statements, so it has no model to format' },
  make_bag: { kind: 'aggregation' },
});

/** Operators and sources of Axiom's APL that Ferry does not run, with the reason a user is told. */
export const UNSUPPORTED_OPERATORS: Record<string, string> = lookupTable({
  externaldata: 'Ferry does not fetch URLs while querying',
});
