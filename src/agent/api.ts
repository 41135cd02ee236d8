/**
 * The agent's HTTP API (`agent.api.listen`, loopback by default): GET /metrics (Prometheus), /health,
 * /components (each component's counters, which `ferry top` turns into rates) and /tap (the events
 * leaving sources and transforms as NDJSON, for `ferry tap`). Read-only, on node:http: a remote-only agent
 * stays small. A tap shows events themselves, so it answers only a caller on the same host, whatever
 * address the API listens on.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { compileEventCondition } from '../apl/js/pipeline.js';
import { AplError } from '../apl/errors.js';
import type { ComponentStats } from './component-stats.js';
import { renderMetrics } from './metrics.js';
import type { Pipeline } from './pipeline/pipeline.js';
import type { TapHub, TapListener } from './pipeline/taps.js';
import type { RunningService } from '../service/service.js';
import { Buckets } from './transforms/throttle.js';

/** What the API reads of the running agent, now (the pipeline changes on reload). */
export interface ApiSubject {
  readonly pipelineNow: Pipeline;
  readonly service: RunningService | undefined;
  health(): { status: string };
  components(): ComponentStats[];
  /** The names a tap may listen to: sources, transforms, and a route's outputs (`split.errors`). */
  tappable(): { names: string[]; withOutputs: Map<string, string[]> };
  readonly taps: TapHub;
}

/** Taps at once: each copies events, so their number is bounded. */
const MAX_TAPS = 8;
/** What a tap's reader may leave unread before lines are skipped rather than held. */
const MAX_UNREAD_BYTES = 1 << 20;
const MAX_TAP_RATE = 10_000;
/** How long a tap may leave a MiB unread before it is ended (its place among the 8 is freed). */
const STALLED_TAP_MS = 60_000;

export class AgentApi {
  readonly server: Server;
  private readonly sessions = new Set<ServerResponse>();

  constructor(private readonly subject: () => ApiSubject | undefined) {
    this.server = createServer((req, res) => this.handle(req, res));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let url: URL;
    try {
      // A target node's parser lets through (`//[`) is no URL: answered, never thrown in the handler.
      url = new URL(req.url ?? '/', 'http://agent');
    } catch {
      return json(res, 400, { code: 400, message: 'the request target is not a valid path' });
    }
    const agent = this.subject();
    if (req.method !== 'GET') return json(res, 405, { code: 405, message: 'only GET' }, { allow: 'GET' });
    switch (url.pathname) {
      case '/metrics':
        res
          .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
          .end(renderMetrics(agent?.pipelineNow, agent?.service, this.sessions.size));
        return;
      case '/health': {
        const body = agent?.health() ?? { status: 'starting' };
        return json(res, body.status === 'ok' || body.status === 'degraded' ? 200 : 503, body);
      }
      case '/components':
        if (!agent) return json(res, 503, { code: 503, message: 'the agent is starting' });
        return json(res, 200, { components: agent.components() });
      case '/tap':
        if (!agent) return json(res, 503, { code: 503, message: 'the agent is starting' });
        return this.tap(req, res, url, agent);
      default:
        return json(res, 404, {
          code: 404,
          message: `${url.pathname} not found (try /metrics, /health, /components or /tap)`,
        });
    }
  }

  private tap(req: IncomingMessage, res: ServerResponse, url: URL, agent: ApiSubject): void {
    // The caller is on this host, and asked for it by a loopback name: a web page whose name was made to
    // resolve to 127.0.0.1 (DNS rebinding) sends its own name as Host.
    if (!isLoopback(req.socket.remoteAddress) || !isLoopbackHost(req.headers.host))
      return json(res, 403, { code: 403, message: 'taps show events: they answer callers on this host only' });
    if (this.sessions.size >= MAX_TAPS)
      return json(res, 429, { code: 429, message: `${MAX_TAPS} taps are open already; close one` });
    const { names, withOutputs } = agent.tappable();
    const asked = url.searchParams.getAll('component');
    for (const c of asked) {
      const outputs = withOutputs.get(c);
      if (outputs)
        return json(res, 400, {
          code: 400,
          message: `${c} sends its events to named outputs: tap ${outputs.join(', ')}`,
        });
      if (!names.includes(c))
        return json(res, 404, {
          code: 404,
          message: `no source or transform named "${c}" (there are: ${names.join(', ')})`,
        });
    }
    const rateText = url.searchParams.get('rate') ?? '100';
    const rate = Number(rateText);
    if (!Number.isInteger(rate) || rate < 1 || rate > MAX_TAP_RATE)
      return json(res, 400, {
        code: 400,
        message: `rate must be a whole number from 1 to ${MAX_TAP_RATE}, not "${rateText}"`,
      });
    let test: TapListener['test'];
    const where = url.searchParams.get('where');
    if (where) {
      try {
        // Failures on an event are the tap's own: that event is not shown.
        test = compileEventCondition(where);
      } catch (err) {
        if (err instanceof AplError || err instanceof RangeError)
          return json(res, 400, { code: 400, message: `where: ${err.message}` });
        throw err;
      }
    }
    const bucket = new Buckets(rate, 1);
    let skipped = 0;
    const listener: TapListener = {
      components: new Set(asked.length ? asked : names),
      test,
      // Asked before an event is written out or filtered: a tap past its rate or its reader's pace costs
      // the flow a count, not a copy.
      ready: () => {
        if (res.writableLength <= MAX_UNREAD_BYTES && bucket.ready('', Date.now())) return true;
        skipped++;
        return false;
      },
      offer: (component, line) => {
        bucket.take('', Date.now());
        res.write(`{"component":${JSON.stringify(component)},"event":${line}}\n`);
      },
    };
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    res.flushHeaders();
    // What was skipped is said once a second, so the reader knows the stream is not all there is; a
    // reader that has read nothing for a minute gives its place up.
    let stalledSince: number | undefined;
    const notice = setInterval(() => {
      if (res.writableLength > MAX_UNREAD_BYTES) {
        stalledSince ??= Date.now();
        if (Date.now() - stalledSince > STALLED_TAP_MS) res.destroy();
        return;
      }
      stalledSince = undefined;
      if (skipped === 0) return;
      res.write(`{"skipped":${skipped}}\n`);
      skipped = 0;
    }, 1000);
    this.sessions.add(res);
    agent.taps.add(listener);
    res.on('close', () => {
      clearInterval(notice);
      agent.taps.remove(listener);
      this.sessions.delete(res);
    });
  }

  /** Ends every tap (a reload: the components they named may be gone; their readers connect again). */
  endTaps(): void {
    for (const res of this.sessions) res.end();
  }

  /** Ends the taps and stops listening. */
  async close(): Promise<void> {
    this.endTaps();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** A Host header naming this host by a loopback name or address (with any port). */
function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase();
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

function isLoopback(address: string | undefined): boolean {
  return (
    address !== undefined && (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'))
  );
}
