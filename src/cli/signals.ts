/**
 * Counting the signals that stop a daemon. Ctrl-C in a terminal sends SIGINT to the whole process group,
 * and `npm start` (or any wrapper) forwards its own copy to the child: the same keypress arrives twice
 * within milliseconds. A SIGINT repeated inside a short grace is that one request; past the grace, or any
 * other signal (a SIGTERM is never sent twice by accident), is a second request, which ends the process
 * without waiting.
 */
export const REPEAT_GRACE_MS = 1000;

export class SignalCount {
  count = 0;
  private last: { sig: string; at: number } | undefined;

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** Whether this signal is a new request (counted); false for an echo of the last one. */
  counts(sig: string): boolean {
    const at = this.now();
    if (sig === 'SIGINT' && this.last?.sig === sig && at - this.last.at < REPEAT_GRACE_MS) return false;
    this.last = { sig, at };
    this.count++;
    return true;
  }
}
