/**
 * Sinks deliver batches of NDJSON lines (one event each) somewhere: an Axiom-compatible API, or the
 * embedded store. They share this one interface, and the config names them (`type: axiom`).
 * send() resolves only once the batch is delivered (or its refused events are dead-lettered); the
 * queue in front of the sink is acknowledged after that.
 */
export interface SinkCounters {
  eventsOut: number;
  bytesOut: number;
  retries: number;
  deadLettered: number;
}

export interface Sink {
  readonly counters: SinkCounters;
  send(lines: string[]): Promise<void>;
  /** Stops retrying; a send in progress rejects and its batch stays queued. */
  close(): Promise<void>;
}
