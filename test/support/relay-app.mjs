/**
 * An application that logs through one of Axiom's official clients, pointed at the agent's relay:
 *   node relay-app.mjs js|pino|winston URL TOKEN DATASET COUNT PREFIX
 * Each event carries `id` = PREFIX-<n> and `ts` (epoch milliseconds). It prints one JSON line with what the
 * client reported (ingested counts, errors) and exits once the client has flushed.
 */
const [kind, url, token, dataset, countText, prefix] = process.argv.slice(2);
const count = Number(countText);
const errors = [];
const onError = (e) => errors.push(String(e?.message ?? e));
const event = (i) => ({ id: `${prefix}-${i}`, ts: Date.UTC(2026, 0, 1) + i });

let ingested = 0;
if (kind === 'js') {
  const { AxiomWithoutBatching } = await import('@axiomhq/js');
  const client = new AxiomWithoutBatching({ token, url, onError });
  // Two requests, each waited for: the relay answers once the events are in its disk queue.
  for (const half of [0, 1]) {
    const events = Array.from({ length: count / 2 }, (_, i) => event(half * (count / 2) + i));
    const status = await client.ingest(dataset, events, { timestampField: 'ts', timestampFormat: 'unixms' });
    ingested += status.ingested;
  }
} else if (kind === 'pino') {
  const { default: pino } = await import('pino');
  const transport = pino.transport({ target: '@axiomhq/pino', options: { dataset, token, url } });
  const logger = pino({ level: 'info' }, transport);
  for (let i = 0; i < count; i++) logger.info(event(i), `message ${i}`);
  // pino's transport flushes as the process exits (its worker's errors go to stderr).
  ingested = count;
} else if (kind === 'winston') {
  const winston = (await import('winston')).default;
  const { WinstonTransport } = await import('@axiomhq/winston');
  const transport = new WinstonTransport({ dataset, token, url, onError });
  const logger = winston.createLogger({ transports: [transport] });
  for (let i = 0; i < count; i++) logger.info(`message ${i}`, event(i));
  await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve, reject) => transport.flush((e) => (e ? reject(e) : resolve())));
  ingested = count;
} else {
  throw new Error(`unknown client ${kind}`);
}
process.stdout.write(`${JSON.stringify({ kind, ingested, errors })}\n`);
