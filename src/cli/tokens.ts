/**
 * `ferry tokens`: the API tokens of a running service (what applications and agents ingest and query
 * with), through the HTTP API with the owner's token by default. Capabilities come from flags
 * (`--ingest logs --query logs --org monitors=read`) or a JSON file; a secret is printed once.
 */
import { readFileSync } from 'node:fs';
import { lookupTable } from '../util/lookup.js';
import type { FerryConfig } from './config.js';
import { renderRows } from './query-output.js';
import {
  CommandError,
  commandArgs,
  requestService,
  SERVICE_FLAGS,
  ServiceCallError,
  subcommand,
  targetFor,
} from './service-client.js';

type Capabilities = Record<string, Record<string, string[]>>;
type OrgCapabilities = Record<string, string[]>;

interface ApiToken {
  id: string;
  name: string;
  description: string;
  expiresAt: string | null;
  datasetCapabilities: Capabilities;
  orgCapabilities: OrgCapabilities;
  token?: string;
}

/** `logs: ingest, query; *: query`: what a token may do with which datasets, in one cell. */
const datasetSummary = (c: Capabilities) =>
  Object.entries(c)
    .map(([ds, caps]) => `${ds}: ${Object.keys(caps).join(', ')}`)
    .join('; ') || '-';
const orgSummary = (c: OrgCapabilities) =>
  Object.entries(c)
    .map(([area, actions]) => `${area}: ${actions.join(', ')}`)
    .join('; ') || '-';

interface Flags {
  ingest?: string[];
  query?: string[];
  org?: string[];
  capabilities?: string;
  description?: string;
  expires?: string;
  'old-expires'?: string;
}

/** The capabilities a create asks for: the file's, with the flags' added. */
function capabilitiesOf(v: Flags): { datasetCapabilities: Capabilities; orgCapabilities: OrgCapabilities } {
  let datasetCapabilities: Capabilities = {};
  let orgCapabilities: OrgCapabilities = {};
  if (v.capabilities) {
    let doc: { datasetCapabilities?: Capabilities; orgCapabilities?: OrgCapabilities };
    try {
      doc = JSON.parse(readFileSync(v.capabilities, 'utf8')) as typeof doc;
    } catch (e) {
      throw new CommandError(`--capabilities ${v.capabilities}: ${(e as Error).message}`, 2);
    }
    if (!doc || typeof doc !== 'object' || Array.isArray(doc))
      throw new CommandError(
        `--capabilities ${v.capabilities}: a JSON object {datasetCapabilities, orgCapabilities}`,
        2,
      );
    datasetCapabilities = { ...doc.datasetCapabilities };
    orgCapabilities = { ...doc.orgCapabilities };
  }
  const grant = (datasets: string[] | undefined, cap: string, action: string) => {
    for (const ds of datasets ?? []) datasetCapabilities[ds] = { ...datasetCapabilities[ds], [cap]: [action] };
  };
  grant(v.ingest, 'ingest', 'create');
  grant(v.query, 'query', 'read');
  for (const o of v.org ?? []) {
    const [area, actions] = o.split('=');
    if (!area || !actions) throw new CommandError(`--org takes AREA=ACTIONS (monitors=read,create), got "${o}"`, 2);
    orgCapabilities[area] = actions.split(',').filter(Boolean);
  }
  return { datasetCapabilities, orgCapabilities };
}

/** A token's secret: the only line on stdout (for `$(ferry tokens create …)`), what it is on stderr. */
function printSecret(t: ApiToken, what: string, out: (s: string) => void): void {
  process.stderr.write(`${what} API token ${t.id} (${t.name}); the secret is shown only this once:\n`);
  out(`${t.token}\n`);
}

const ARITY: Record<string, number> = lookupTable({ list: 0, create: 1, regenerate: 1, delete: 1 });

export async function tokensCommand(
  argv: string[],
  loadConfig: (file?: string) => FerryConfig,
  out: (s: string) => void,
): Promise<void> {
  const { values, positionals } = commandArgs({
    args: argv,
    options: {
      ...SERVICE_FLAGS,
      ingest: { type: 'string', multiple: true },
      query: { type: 'string', multiple: true },
      org: { type: 'string', multiple: true },
      capabilities: { type: 'string' },
      description: { type: 'string' },
      expires: { type: 'string' },
      'old-expires': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const { sub, args } = subcommand('tokens', positionals, ARITY);
  const body = sub === 'create' ? capabilitiesOf(values) : undefined;
  if (body && Object.keys(body.datasetCapabilities).length + Object.keys(body.orgCapabilities).length === 0)
    throw new CommandError(
      'tokens create needs capabilities: --ingest DATASET, --query DATASET, --org AREA=ACTIONS or --capabilities FILE',
      2,
    );
  const t = targetFor(values, loadConfig);
  try {
    switch (sub) {
      case 'list': {
        const tokens = await requestService<ApiToken[]>(t, 'listing API tokens', 'GET', '/v2/tokens');
        out(
          renderRows(
            'tokens',
            ['id', 'name', 'expires', 'datasets', 'org'],
            tokens.map((k) => [
              k.id,
              k.name,
              k.expiresAt ?? 'never',
              datasetSummary(k.datasetCapabilities),
              orgSummary(k.orgCapabilities),
            ]),
          ),
        );
        return;
      }
      case 'create': {
        const k = await requestService<ApiToken>(t, 'creating the API token', 'POST', '/v2/tokens', {
          name: args[0],
          ...(values.description ? { description: values.description } : {}),
          ...(values.expires ? { expiresAt: values.expires } : {}),
          ...body,
        });
        printSecret(k, 'created', out);
        return;
      }
      case 'regenerate': {
        const k = await requestService<ApiToken>(
          t,
          'regenerating the API token',
          'POST',
          `/v2/tokens/${encodeURIComponent(args[0]!)}/regenerate`,
          {
            // The old secret stops now unless told to last a while (for a rollout).
            existingTokenExpiresAt: values['old-expires'] ?? new Date().toISOString(),
            ...(values.expires ? { newTokenExpiresAt: values.expires } : {}),
          },
        );
        // A regenerated token is a new token (its own id); the old one lives until --old-expires.
        printSecret(k, `regenerated ${args[0]} as`, out);
        return;
      }
      case 'delete': {
        await requestService(t, 'deleting the API token', 'DELETE', `/v2/tokens/${encodeURIComponent(args[0]!)}`);
        out(`deleted API token ${args[0]}\n`);
        return;
      }
    }
  } catch (e) {
    if (e instanceof ServiceCallError) throw new CommandError(e.message, 1);
    throw e;
  }
}
