/** HTTP errors: every error response is JSON {code, message} with the status as code. */
import { MplError, MplLimitError } from '../../mpl/errors.js';
import { MplParamError } from '../../mpl/binder.js';
import { AplError } from '../../apl/errors.js';
import { NotAllowed } from '../auth/capabilities.js';
import { FieldError } from '../bodies/fields.js';
import { IngestBodyError } from '../../ingest/errors.js';
import { QueryForbidden, QueryInputError } from '../query/engine.js';
import { HiddenError, StoreError } from '../store/errors.js';
import { DatabaseReopening, QueryTimeout, ResultTooLarge, ServiceStopping } from '../store/db.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (m: string) => new HttpError(400, m);
export const unauthorized = (m = 'Unauthorized: missing, invalid or expired token') => new HttpError(401, m);
export const forbidden = (m = 'Forbidden') => new HttpError(403, m);
export const notFoundError = (m: string) => new HttpError(404, m);
export const tooLarge = (m: string) => new HttpError(413, m);

const STORE_STATUS: Record<StoreError['kind'], number> = {
  not_found: 404,
  conflict: 409,
  invalid: 400,
  too_large: 413,
  forbidden: 403,
};

const INGEST_STATUS: Record<IngestBodyError['kind'], number> = {
  invalid: 400,
  too_large: 413,
  unsupported: 415,
  busy: 503,
};

/** The status and message to answer for any thrown value. Unknown errors are 500 and their text is not leaked. */
export function toHttp(err: unknown): {
  status: number;
  message: string;
  headers: Record<string, string>;
  log?: boolean;
  /** The caller was refused something it may not know exists (answered 404). */
  hidden?: boolean;
} {
  if (err instanceof HiddenError) return { status: 404, message: err.message, headers: {}, hidden: true };
  if (err instanceof HttpError) return { status: err.status, message: err.message, headers: err.headers };
  if (err instanceof FieldError) return { status: 400, message: err.message, headers: {} };
  if (err instanceof IngestBodyError)
    return {
      status: INGEST_STATUS[err.kind],
      message: err.message,
      headers: err.kind === 'busy' ? { 'retry-after': '1' } : {},
    };
  if (err instanceof StoreError) return { status: STORE_STATUS[err.kind], message: err.message, headers: {} };
  if (err instanceof AplError)
    return { status: err.kind === 'not_found' ? 404 : 400, message: err.message, headers: {} };
  if (err instanceof QueryInputError) return { status: 400, message: err.message, headers: {} };
  if (err instanceof MplError || err instanceof MplParamError || err instanceof MplLimitError)
    return { status: 400, message: err.message, headers: {} };
  if (err instanceof QueryForbidden || err instanceof NotAllowed)
    return { status: 403, message: err.message, headers: {} };
  if (err instanceof ResultTooLarge) return { status: 400, message: err.message, headers: {} };
  if (err instanceof ServiceStopping || err instanceof DatabaseReopening)
    return { status: 503, message: err.message, headers: { 'retry-after': '5' } };
  if (err instanceof QueryTimeout)
    return {
      status: 408,
      message: `${err.message} (service.query_timeout); narrow the time range or the query`,
      headers: {},
    };
  const text = (err as Error)?.message ?? '';
  // A query that fails while it runs on data it cannot handle (a bad regex, a number out of range) is the
  // query's fault, not the server's.
  if (/^(Invalid Input Error|Conversion Error|Out of Range Error)/.test(text)) {
    return { status: 400, message: `the query failed while running: ${text.split('\n')[0]}`, headers: {} };
  }
  if ((err as { aplQuery?: boolean }).aplQuery && /^Parser Error/.test(text)) {
    return {
      status: 400,
      message: `the query is too complex for the engine: ${text.split('\n')[0]}; simplify it (fewer operators or columns)`,
      headers: {},
      log: true,
    };
  }
  if ((err as { aplQuery?: boolean }).aplQuery && /^Out of Memory Error/.test(text)) {
    return {
      status: 400,
      message: `the query needs more memory than service.memory_limit allows: ${text.split('\n')[0]}; narrow the time range, the columns or the groups`,
      headers: {},
      log: true,
    };
  }
  if (/^Binder Error/.test(text) && (err as { aplQuery?: boolean }).aplQuery) {
    // A combination of types the APL binder let through but DuckDB cannot run: the query's operands are
    // the cause, so the user gets the reason (the server also logs it, see server.ts, to close the gap).
    return {
      status: 400,
      message: `the query combines types this service cannot run: ${text.split('\n')[0]}`,
      headers: {},
      log: true,
    };
  }
  const e = err as { statusCode?: number; message?: string; code?: string };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    // fastify's own client errors (bad JSON body, body too large, schema validation)
    const message = e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 'request body too large' : (e.message ?? 'bad request');
    return { status: e.statusCode, message, headers: {} };
  }
  return { status: 500, message: 'internal server error', headers: {} };
}
