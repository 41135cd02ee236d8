/**
 * A reason the program cannot start that the user can fix, already said in one line naming what to
 * change: the command line prints its message, without a stack trace, and exits 1.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}
