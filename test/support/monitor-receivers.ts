/** Real receivers for notifier tests: an HTTP server that records requests, and an SMTP server. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { SMTPServer } from 'smtp-server';

export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  json(): Record<string, unknown>;
}

export interface HttpReceiver {
  url: string;
  requests: Received[];
  /** Answers to give, in order, before answering 200 (e.g. [503, 503]). */
  failNext(statuses: number[]): void;
  close(): Promise<void>;
}

export async function httpReceiver(): Promise<HttpReceiver> {
  const requests: Received[] = [];
  const failures: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const status = failures.shift() ?? 200;
      requests.push({
        method: req.method!,
        path: req.url!,
        headers: req.headers,
        body,
        json: () => JSON.parse(body) as Record<string, unknown>,
      });
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(status === 200 ? '{"ok":true}' : '{"error":"try later"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext: (s) => failures.push(...s),
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface Mail {
  from: string;
  to: string[];
  data: string;
}

export async function smtpReceiver(): Promise<{ port: number; mails: Mail[]; close(): Promise<void> }> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          data: Buffer.concat(chunks).toString('utf8'),
        });
        done();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.server.address() as { port: number };
  return { port, mails, close: () => new Promise((r) => server.close(() => r())) };
}
