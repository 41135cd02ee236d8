/** Dataset management: /v2/datasets (id = name) and the older /v1/datasets, plus fields and map fields. */
import type { FastifyInstance } from 'fastify';
import { canDataset, canSeeDataset } from '../../auth/capabilities.js';
import type { EventStore } from '../../store/event-store.js';
import { parseDuration } from '../../../util/units.js';
import { formatRfc3339Nano } from '../../../util/time.js';
import { badRequest } from '../errors.js';
import { BUILTIN_FIELDS, datasetView, fieldView } from '../views.js';

type IdParams = { Params: { id: string } };

const createBody = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string' },
    description: { type: 'string' },
    kind: { type: 'string' },
    retentionDays: { type: 'integer', minimum: 0 },
    useRetentionPeriod: { type: 'boolean' },
    edgeDeployment: { type: 'string', maxLength: 256 },
  },
} as const;

const updateBody = {
  type: 'object',
  properties: {
    description: { type: 'string' },
    retentionDays: { type: 'integer', minimum: 0 },
    useRetentionPeriod: { type: 'boolean' },
  },
} as const;

export function datasetRoutes(app: FastifyInstance, store: EventStore): void {
  for (const v of ['v1', 'v2'] as const) {
    const base = `/${v}/datasets`;

    app.get(base, async (req) =>
      store
        .listDatasets()
        .filter((d) => canSeeDataset(req.principal, d.name))
        .map(datasetView),
    );

    app.post<{
      Body: {
        name: string;
        description?: string;
        kind?: string;
        retentionDays?: number;
        useRetentionPeriod?: boolean;
        edgeDeployment?: string;
      };
    }>(base, { schema: { body: createBody } }, async (req) => {
      // The spec's who: the name of the creator, as it was when the dataset was made.
      const d = await store.createDataset({ ...req.body, who: req.principal.name });
      return datasetView(d);
    });

    app.get<IdParams>(`${base}/:id`, async (req) => {
      return datasetView(store.getDataset(req.params.id));
    });

    app.put<IdParams & { Body: { description?: string; retentionDays?: number; useRetentionPeriod?: boolean } }>(
      `${base}/:id`,
      { schema: { body: updateBody } },
      async (req) => {
        // A shorter retention deletes the older events at once: it takes the right to delete them.
        const mayShorten =
          canDataset(req.principal, req.params.id, 'trim', 'update') ||
          canDataset(req.principal, req.params.id, 'data', 'delete');
        return datasetView(await store.updateDataset(req.params.id, req.body ?? {}, mayShorten));
      },
    );

    app.delete<IdParams>(`${base}/:id`, async (req, reply) => {
      await store.deleteDataset(req.params.id);
      return reply.code(204).send();
    });

    app.post<IdParams & { Body: { maxDuration?: string } }>(`${base}/:id/trim`, async (req, reply) => {
      const text = req.body?.maxDuration;
      if (typeof text !== 'string') throw badRequest('body must have maxDuration, a duration such as "1h" or "720h"');
      let ns: bigint;
      try {
        ns = parseDuration(text);
      } catch (e) {
        throw badRequest((e as Error).message);
      }
      const deleted = await store.trim(req.params.id, ns);
      // v2 answers 204; v1 keeps its historic body (numDeleted, which this service fills in truthfully).
      return v === 'v2' ? reply.code(204).send() : { numDeleted: deleted };
    });

    // axiom-rs's datasets.info: the dataset's events, time span, bytes and fields (README: the table of routes).
    app.get<IdParams>(`${base}/:id/info`, async (req) => {
      const d = store.getDataset(req.params.id);
      const info = await store.info(d.name);
      const fields = [...BUILTIN_FIELDS, ...store.listFields(d.name).map(fieldView)];
      return {
        name: d.name,
        numEvents: info.numEvents,
        numFields: fields.length,
        inputBytes: info.inputBytes,
        compressedBytes: info.compressedBytes,
        minTime: info.minNs === undefined ? null : formatRfc3339Nano(info.minNs),
        maxTime: info.maxNs === undefined ? null : formatRfc3339Nano(info.maxNs),
        created: d.created,
        fields,
      };
    });

    app.get<IdParams>(`${base}/:id/fields`, async (req) => {
      return [...BUILTIN_FIELDS, ...store.listFields(req.params.id).map(fieldView)];
    });

    app.get<IdParams & { Params: { field: string } }>(`${base}/:id/fields/:field`, async (req) => {
      const builtin = BUILTIN_FIELDS.find((f) => f.name === req.params.field);
      if (builtin) {
        store.getDataset(req.params.id);
        return builtin;
      }
      return fieldView(store.getField(req.params.id, req.params.field));
    });

    app.put<IdParams & { Params: { field: string }; Body: { description?: string; unit?: string; hidden?: boolean } }>(
      `${base}/:id/fields/:field`,
      {
        schema: {
          body: {
            type: 'object',
            properties: { description: { type: 'string' }, unit: { type: 'string' }, hidden: { type: 'boolean' } },
          },
        },
      },
      async (req) => {
        return fieldView(await store.updateFieldMeta(req.params.id, req.params.field, req.body ?? {}));
      },
    );

    app.get<IdParams>(`${base}/:id/mapfields`, async (req) => {
      return store.getDataset(req.params.id).mapFields;
    });

    app.post<IdParams & { Body: { name: string } }>(
      `${base}/:id/mapfields`,
      {
        schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
      },
      async (req) => {
        await store.addMapField(req.params.id, req.body.name);
        return { name: req.body.name };
      },
    );

    app.put<IdParams & { Body: string[] }>(
      `${base}/:id/mapfields`,
      {
        schema: { body: { type: 'array', items: { type: 'string' } } },
      },
      async (req) => {
        return store.setMapFields(req.params.id, req.body);
      },
    );

    app.delete<IdParams & { Params: { name: string } }>(`${base}/:id/mapfields/:name`, async (req, reply) => {
      await store.removeMapField(req.params.id, req.params.name);
      return reply.code(204).send();
    });
  }
}
