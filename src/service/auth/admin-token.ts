/**
 * The owner's personal access token (xapt-...). From FERRY_ADMIN_TOKEN, or generated on first start into
 * <data-dir>/admin-token with mode 0600. The token itself is never logged (logs travel: journald, log
 * shippers, support tickets); the log says where the file is.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { StartupError } from '../../util/startup-error.js';

export function resolveAdminToken(dataDir: string, env: NodeJS.ProcessEnv, log: Logger): string {
  const fromEnv = env.FERRY_ADMIN_TOKEN?.trim();
  if (fromEnv) {
    if (!fromEnv.startsWith('xapt-'))
      log.warn(
        'FERRY_ADMIN_TOKEN does not start with "xapt-"; axiom-go and the axiom CLI reject such tokens client-side',
      );
    return fromEnv;
  }
  const file = join(dataDir, 'admin-token');
  if (existsSync(file)) {
    // The owner's token opens everything: a copy others can read is refused, not used.
    const mode = statSync(file).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      throw new StartupError(
        `${file} is readable by others (mode ${mode.toString(8).padStart(4, '0')}); it holds the owner's token: chmod 600 ${file}`,
      );
    }
    return readFileSync(file, 'utf8').trim();
  }
  const token = `xapt-${randomUUID()}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  log.warn({ file }, `generated the owner's personal access token into ${file} (mode 0600); read it from there`);
  return token;
}
