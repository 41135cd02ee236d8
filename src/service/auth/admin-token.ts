/**
 * The owner's personal access token (xapt-...). From FERRY_ADMIN_TOKEN, or generated on first start into
 * <data-dir>/admin-token with mode 0600. The token itself is never logged (logs travel: journald, log
 * shippers, support tickets); the log says where the file is.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';

export function resolveAdminToken(dataDir: string, env: NodeJS.ProcessEnv, log: Logger): string {
  const fromEnv = env.FERRY_ADMIN_TOKEN?.trim();
  if (fromEnv) {
    if (!fromEnv.startsWith('xapt-')) log.warn('FERRY_ADMIN_TOKEN does not start with "xapt-"; axiom-go and the axiom CLI reject such tokens client-side');
    return fromEnv;
  }
  const file = join(dataDir, 'admin-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const token = `xapt-${randomUUID()}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  log.warn({ file }, `generated the owner's personal access token into ${file} (mode 0600); read it from there`);
  return token;
}
