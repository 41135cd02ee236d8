/**
 * POSTs bodies over keep-alive connections and reads each (small) answer whole: all the axiom sink and
 * the notifiers need from an HTTP client.
 *
 * Node's own client rather than undici, for the agent's memory: undici's module and its first request's
 * WebAssembly compile raise the agent's peak RSS by a third at the same throughput (docs/benchmarks.md).
 * Node's http parses answers with the same llhttp, built in.
 */
import http from 'node:http';
import https from 'node:https';

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The answer's bytes (an OTLP answer is protobuf). */
  body: Buffer;
}

export interface HttpPostOptions {
  /** Connections open at once (more requests wait for one). */
  connections: number;
  /** An idle kept-alive connection is closed after this long. */
  idleMs: number;
  /** How host names are resolved (the notifiers leave out addresses they may not send to). */
  lookup?: typeof import('node:dns').lookup;
}

/** Answers longer than this are cut: the sink reads counts, failures and error messages from them. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export class HttpPoster {
  private readonly agent: http.Agent;
  private readonly client: typeof http | typeof https;
  private readonly inFlight = new Set<Promise<HttpAnswer>>();

  /** `url`: where post() sends; an https poster may also post() to other https URLs, an http one to http. */
  constructor(
    private readonly url: URL,
    o: HttpPostOptions,
  ) {
    this.client = url.protocol === 'https:' ? https : http;
    this.agent = new this.client.Agent({
      keepAlive: true,
      maxSockets: o.connections,
      timeout: o.idleMs,
      ...(o.lookup ? { lookup: o.lookup } : {}),
    });
  }

  /**
   * Sends `body` and resolves with the answer; rejects on a network error, or when the connection stays
   * silent for `timeoutMs` (waiting for the answer or within it).
   */
  post(body: Buffer, headers: Record<string, string>, timeoutMs: number, url: URL = this.url): Promise<HttpAnswer> {
    const answer = new Promise<HttpAnswer>((resolve, reject) => {
      const req = this.client.request(
        url,
        {
          method: 'POST',
          agent: this.agent,
          headers: { ...headers, 'content-length': String(body.length) },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let kept = 0;
          res.on('data', (c: Buffer) => {
            if (kept >= MAX_ANSWER_BYTES) return;
            chunks.push(c);
            kept += c.length;
          });
          res.on('end', () => {
            const bytes = Buffer.concat(chunks);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text: bytes.toString('utf8'), body: bytes });
          });
          res.on('error', reject);
          res.on('close', () => {
            if (!res.complete) reject(new Error(`${url.origin} closed the connection within its answer`));
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${url.origin} sent no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
    this.inFlight.add(answer);
    void answer.finally(() => this.inFlight.delete(answer)).catch(() => undefined);
    return answer;
  }

  /**
   * Closes the connections once the requests in progress have their answers: a batch the receiver took
   * is known as delivered, instead of being sent again after the next start.
   */
  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    this.agent.destroy();
  }
}
