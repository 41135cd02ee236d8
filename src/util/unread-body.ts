/**
 * A request answered before its body was read to the end (refused for its size, its encoding, its
 * token): its connection cannot carry another request, since the rest of the body cannot be told from the
 * next request's start. The answer goes out with `Connection: close`, and what the client still sends is
 * read and let go, so that it reads the answer (a reset while it still sends would lose it); after a
 * bounded time the connection is closed whatever the client does, so that no client holds a server's
 * shutdown open.
 */
import type { IncomingMessage } from 'node:http';

export function letGoOfUnreadBody(req: IncomingMessage, graceMs = 2_000): void {
  if (req.complete) return;
  req.resume();
  const socket = req.socket;
  const timer = setTimeout(() => socket?.destroy(), graceMs);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
}
