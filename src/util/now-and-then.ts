/**
 * A warning that may come once per event from a hostile or broken peer (a failed TLS handshake, an
 * unreadable journal entry): said the first time, then at most once per interval with how many came
 * since, so the log stays readable and no peer can flood it.
 */
export class NowAndThen {
  private last = 0;
  private since = 0;

  constructor(private readonly intervalMs = 60_000) {}

  /** Calls `say` with the count since it last spoke, when it is time to speak. */
  hit(say: (count: number) => void, now = Date.now()): void {
    this.since++;
    if (this.last !== 0 && now - this.last < this.intervalMs) return;
    say(this.since);
    this.since = 0;
    this.last = now;
  }
}
