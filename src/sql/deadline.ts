/**
 * A statement's deadline as SQL can read it. JavaScript functions called by DuckDB run on the service's
 * one thread: while a call runs no timer fires, so the interrupt that stops a statement at its time limit
 * (or at shutdown) cannot be sent. A function whose calls may be long reads the deadline in its SQL and
 * stops itself. The connection sets the variable before each statement whose SQL reads it.
 */
export const DEADLINE_VARIABLE = 'ferry_deadline';

/** Epoch milliseconds after which the statement should stop; 0 when it has no time limit. */
export const DEADLINE_SQL = `coalesce(getvariable('${DEADLINE_VARIABLE}'), 0)::BIGINT`;
