/**
 * The relay's promise, tried adversarially against the real binary: "200 means the events are on the
 * agent's disk". Concurrent clients send random requests (arrays, NDJSON, CSV; gzip, zstd or none; to
 * several datasets), some of them hostile (a malformed array, a wrong token, an oversized body, values that
 * are not objects), while the agent is killed with SIGKILL and started again and the receivers go down and
 * come back, over a random topology (one sink, or two fed by a fork). In the end every event of every
 * request answered 200 has arrived at every receiver, in the dataset its request named, and no event of a
 * refused request has arrived anywhere. The seed is random unless FERRY_RELAY_SEED is set, and is printed
 * in any failure.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { compress as zstdCompress } from 'zstd-napi';
import {
  startAgent,
  startReceiver,
  stopAgentsAndReceivers,
  type AgentProcess,
  type Receiver,
} from '../../support/agent-process.js';
import { freePort, tempDir, testSeed } from '../../support/helpers.js';

const TOKEN = 'relay-token';
const DATASETS = ['web', 'jobs', 'audit-log'];
const RUN_MS = 20_000;

afterEach(stopAgentsAndReceivers);

interface Request {
  body: Buffer | string;
  headers: Record<string, string>;
  dataset: string;
  /** The ids of the objects it carries, and the status a well-behaved relay must answer. */
  ids: string[];
  expect: number;
}

/** A random request from client `c`; hostile ones must be refused whole. */
function randomRequest(rnd: () => number, c: number, seq: number): Request {
  const dataset = DATASETS[Math.floor(rnd() * DATASETS.length)]!;
  const n = 1 + Math.floor(rnd() * 200);
  const ids = Array.from({ length: n }, (_, i) => `c${c}-${seq}-${i}`);
  const objects = ids.map((id, i) => ({ id, i, msg: 'x'.repeat(Math.floor(rnd() * 200)) }));
  const kind = rnd();
  const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
  let text: string;
  let status = 200;
  if (kind < 0.4) {
    // An array, with a value that is not an object now and then (a failed event, not a refusal).
    const values: unknown[] = [...objects];
    if (rnd() < 0.3) values.splice(Math.floor(rnd() * values.length), 0, 42);
    text = JSON.stringify(values);
    headers['content-type'] = 'application/json';
  } else if (kind < 0.75) {
    text = objects.map((o) => JSON.stringify(o)).join('\n') + (rnd() < 0.3 ? '\nnot json\n' : '\n');
    headers['content-type'] = 'application/x-ndjson';
  } else if (kind < 0.85) {
    text = `id,i,msg\n${objects.map((o) => `${o.id},${o.i},${o.msg}`).join('\n')}`;
    headers['content-type'] = 'text/csv';
  } else {
    // Hostile: refused whole, so none of its events may ever arrive.
    const how = rnd();
    headers['content-type'] = 'application/json';
    text = JSON.stringify(objects);
    if (how < 0.4) {
      text = `${text.slice(0, -1)},{"id":]`;
      status = 400;
    } else if (how < 0.7) {
      headers.authorization = `Bearer ${TOKEN}x`;
      status = 401;
    } else {
      text = JSON.stringify([...objects, { pad: 'p'.repeat(300_000) }]);
      status = 413;
    }
  }
  // An oversized body goes as it is: compressed, the padding would fit the limit.
  const encoding = status === 413 ? 1 : rnd();
  let body: Buffer | string = text;
  if (encoding < 0.3) {
    body = gzipSync(text);
    headers['content-encoding'] = 'gzip';
  } else if (encoding < 0.5) {
    body = zstdCompress(Buffer.from(text));
    headers['content-encoding'] = 'zstd';
  }
  return { body, headers, dataset, ids, expect: status };
}

describe('200 from the relay means the events are on disk (seeded)', () => {
  it('every event of a 200 arrives in its dataset, none of a refused request, through kill -9 and receiver outages', async () => {
    const { rnd, replay } = testSeed('FERRY_RELAY_SEED', 'npx vitest run test/integration/agent/relay-promise.test.ts');
    const fork = rnd() < 0.5;
    const receivers: Receiver[] = [await startReceiver(), ...(fork ? [await startReceiver()] : [])];
    const port = await freePort();
    const dir = tempDir();
    const config = join(dir, 'agent.yaml');
    const sink = (name: string, r: Receiver, input: string) => `  ${name}:
    type: axiom
    inputs: [${input}]
    url: ${r.url}
    token: t
    dataset: fallback
    batch:
      max_events: ${1 + Math.floor(rnd() * 500)}
    retry:
      initial_backoff: 50ms
      max_backoff: 300ms
`;
    writeFileSync(
      config,
      `service: { enabled: false }
agent:
  data_dir: ${dir}/data
  api:
    listen: 127.0.0.1:0
  shutdown_timeout: 2s
sources:
  apps:
    type: http
    address: 127.0.0.1:${port}
    tokens: ["${TOKEN}"]
    max_body_bytes: 256KiB
    queue_timeout: 5s
${fork ? 'transforms:\n  tag:\n    type: enrich\n    inputs: [apps]\n    fields: {copy: second}\n' : ''}sinks:
${sink('one', receivers[0]!, 'apps')}${fork ? sink('two', receivers[1]!, 'tag') : ''}`,
    );

    let agent: AgentProcess = startAgent(config);
    await agent.waitLog('agent running');
    const acked = new Map<string, string>(); // id → dataset
    const refused = new Set<string>();
    const wrong: string[] = [];
    const statuses = new Map<number | string, number>();
    let running = true;
    /** Set by the chaos: called at the next 200, so that the kill lands just after an answer. */
    let answered: (() => void) | undefined;

    const client = async (c: number) => {
      for (let seq = 0; running; seq++) {
        const req = randomRequest(rnd, c, seq);
        let status: number | string;
        try {
          const res = await fetch(`http://127.0.0.1:${port}/v1/ingest/${req.dataset}`, {
            method: 'POST',
            headers: req.headers,
            body: req.body as BodyInit,
            signal: AbortSignal.timeout(10_000),
          });
          status = res.status;
          const answer = (await res.json()) as { ingested?: number };
          if (status === 200 && answer.ingested !== req.ids.length)
            wrong.push(`request c${c}-${seq}: ingested ${answer.ingested} of ${req.ids.length}`);
        } catch {
          status = 'no answer'; // the agent died meanwhile: the client knows nothing, either way is right
          await new Promise((r) => setTimeout(r, 50));
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 200) {
          for (const id of req.ids) acked.set(id, req.dataset);
          answered?.();
        } else if (typeof status === 'number' && status < 500) {
          if (status !== req.expect) wrong.push(`request c${c}-${seq}: ${status}, expected ${req.expect}`);
          for (const id of req.ids) refused.add(id);
        }
        if (rnd() < 0.2) await new Promise((r) => setTimeout(r, rnd() * 50));
      }
    };

    const ops: Record<string, number> = {};
    const chaos = async () => {
      const end = Date.now() + RUN_MS;
      while (Date.now() < end) {
        await new Promise((r) => setTimeout(r, 300 + rnd() * 2_000));
        const op = rnd();
        if (op < 0.4) {
          // The first kill, and half the others, land the moment a 200 was answered: its events must be on disk.
          const justAfter = !ops['kill -9 just after a 200, and restart'] || rnd() < 0.5;
          if (justAfter) await new Promise<void>((r) => (answered = r));
          answered = undefined;
          const name = justAfter ? 'kill -9 just after a 200, and restart' : 'kill -9 and restart';
          ops[name] = (ops[name] ?? 0) + 1;
          agent.child.kill('SIGKILL');
          await agent.exited;
          agent = startAgent(config);
          await agent.waitLog('agent running');
        } else if (op < 0.7) {
          ops['receiver down'] = (ops['receiver down'] ?? 0) + 1;
          const r = receivers[Math.floor(rnd() * receivers.length)]!;
          await r.down();
          setTimeout(() => void r.up(), rnd() * 1_500);
        }
      }
      running = false;
    };

    await Promise.all([chaos(), ...[0, 1, 2, 3].map(client)]);
    for (const r of receivers) await r.up().catch(() => undefined);

    const summary = () =>
      `${replay}; fork ${fork}; ${acked.size} events acknowledged; answers ${JSON.stringify(Object.fromEntries(statuses))}; ops ${JSON.stringify(ops)}`;
    const missing = (r: Receiver) => [...acked.keys()].filter((id) => !r.seen.has(id));
    const deadline = Date.now() + 60_000;
    while (receivers.some((r) => missing(r).length > 0) && Date.now() < deadline)
      await new Promise((res) => setTimeout(res, 200));

    console.log(summary());
    expect(wrong, summary()).toEqual([]);
    expect(acked.size, summary()).toBeGreaterThan(1000);
    expect(ops['kill -9 just after a 200, and restart'] ?? 0, summary()).toBeGreaterThan(0);
    for (const r of receivers) {
      expect(missing(r).slice(0, 10), summary()).toEqual([]);
      const misplaced: string[] = [];
      const forbidden: string[] = [];
      for (const b of r.batches) {
        for (const e of b.events) {
          const id = String(e.id);
          if (refused.has(id)) forbidden.push(id);
          const want = acked.get(id);
          if (want !== undefined && want !== b.dataset) misplaced.push(`${id} in ${b.dataset}, sent to ${want}`);
        }
      }
      expect(forbidden.slice(0, 10), summary()).toEqual([]);
      expect(misplaced.slice(0, 10), summary()).toEqual([]);
    }
  }, 180_000);
});
