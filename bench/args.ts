/**
 * A bench script's command line: `--help` prints its usage; an unknown or malformed option is one line
 * naming it, with the usage, and exit code 2 (not a stack trace).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export function benchArgs<T extends { options: NonNullable<ParseArgsConfig['options']> }>(
  usage: string,
  config: T,
): ReturnType<typeof parseArgs<T>>['values'] {
  if (process.argv.slice(2).some((a) => a === '--help' || a === '-h')) {
    console.log(usage);
    process.exit(0);
  }
  try {
    return parseArgs(config).values;
  } catch (e) {
    console.error(`${(e as Error).message}\n${usage}`);
    process.exit(2);
  }
}
