/**
 * The application side of bench:agent's relay mode, run as a process of its own: reads a file of
 * gzip-compressed NDJSON bodies ([u32 length][body]…, made once by bench/agent.ts) and posts them to the
 * relay, a few requests in flight over keep-alive connections, as an app's Axiom client would. Exits 1 on
 * any answer but 200.
 *
 *   node dist/bench/relay-sender.js FILE PORT TOKEN [IN_FLIGHT]
 */
import { open } from 'node:fs/promises';
import { Agent, request } from 'node:http';

const [file, port, token, inFlightText = '4'] = process.argv.slice(2);
const inFlight = Number(inFlightText);
const agent = new Agent({ keepAlive: true, maxSockets: inFlight });

function post(body: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: Number(port),
        path: '/v1/ingest/bench',
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/x-ndjson',
          'content-encoding': 'gzip',
          'content-length': body.length,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`relay answered ${res.statusCode}: ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const fh = await open(file!);
  let at = 0;
  const head = Buffer.alloc(4);
  const read = async (): Promise<Buffer | undefined> => {
    const { bytesRead } = await fh.read(head, 0, 4, at);
    if (bytesRead < 4) return undefined;
    const body = Buffer.alloc(head.readUInt32LE(0));
    await fh.read(body, 0, body.length, at + 4);
    at += 4 + body.length;
    return body;
  };
  // The workers take bodies one after another, in the file's order.
  let reading: Promise<unknown> = Promise.resolve();
  const next = (): Promise<Buffer | undefined> => {
    const body = reading.then(read);
    reading = body.catch(() => undefined);
    return body;
  };
  const workers = Array.from({ length: inFlight }, async () => {
    for (let body = await next(); body; body = await next()) await post(body);
  });
  await Promise.all(workers);
  await fh.close();
  agent.destroy();
}

main().catch((e: unknown) => {
  console.error(`relay sender: ${(e as Error).message}`);
  process.exit(1);
});
