/**
 * Axiom's published APL front end (@axiomhq/language-service-next, a Bridge.NET build of Kusto.Language)
 * as a test oracle: does it accept a query, and which output columns does it name? Dev dependency only.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface KustoGlobal {
  Kusto: {
    Language: {
      Symbols: Record<string, any>;
      GlobalState: { Default: { WithDatabase(db: unknown): unknown } };
      KustoCode: { ParseAndAnalyze(text: string, globals: unknown): any };
    };
  };
}

let loaded: KustoGlobal['Kusto']['Language'] | undefined;

function kusto(): KustoGlobal['Kusto']['Language'] {
  if (!loaded) {
    require('@axiomhq/language-service-next/bridge.js');
    require('@axiomhq/language-service-next/Kusto.Language.Bridge.js');
    loaded = (globalThis as unknown as KustoGlobal).Kusto.Language;
  }
  return loaded;
}

export type ColumnType = 'string' | 'long' | 'real' | 'bool' | 'datetime' | 'timespan' | 'dynamic';

export interface OracleVerdict {
  errors: string[];
  columns: string[];
}

export class Oracle {
  private readonly globals: unknown;

  constructor(tables: Record<string, Record<string, ColumnType>>) {
    const K = kusto();
    const S = K.Symbols;
    const scalar: Record<ColumnType, unknown> = {
      string: S.ScalarTypes.String,
      long: S.ScalarTypes.Long,
      real: S.ScalarTypes.Real,
      bool: S.ScalarTypes.Bool,
      datetime: S.ScalarTypes.DateTime,
      timespan: S.ScalarTypes.TimeSpan,
      dynamic: S.ScalarTypes.Dynamic,
    };
    const symbols = Object.entries(tables).map(
      ([name, cols]) =>
        new S.TableSymbol.$ctor3(
          name,
          Object.entries(cols).map(([c, t]) => new S.ColumnSymbol(c, scalar[t])),
        ),
    );
    this.globals = K.GlobalState.Default.WithDatabase(new S.DatabaseSymbol.ctor('db', symbols));
  }

  analyze(query: string): OracleVerdict {
    const code = kusto().KustoCode.ParseAndAnalyze(query, this.globals);
    const d = code.GetDiagnostics();
    const errors: string[] = [];
    for (let i = 0; i < d.Count; i++) {
      const x = d.getItem(i);
      if (x.Severity === 'Error') errors.push(`${x.Start}: ${x.Message}`);
    }
    const columns: string[] = [];
    const rt = code.ResultType;
    if (rt?.Columns) for (let i = 0; i < rt.Columns.Count; i++) columns.push(rt.Columns.getItem(i).Name);
    return { errors, columns };
  }
}

/** The fields of the docs' sample-http-logs (apl.md 3.1) as Axiom types them. */
export const HTTP_LOG_FIELDS: Record<string, ColumnType> = {
  id: 'string',
  status: 'string',
  method: 'string',
  uri: 'string',
  req_duration_ms: 'real',
  resp_body_size_bytes: 'long',
  resp_header_size_bytes: 'long',
  content_type: 'string',
  'geo.city': 'string',
  'geo.country': 'string',
  is_tls: 'bool',
  server_datacenter: 'string',
  user_agent: 'string',
  message: 'string',
};
