/**
 * Tells systemd the agent is ready (Type=notify), once its sources and sinks are up: `systemctl start`
 * returns then, and units ordered after ferry start only then.
 *
 * Node cannot send the unix datagram sd_notify() needs without a native addon, so systemd's own
 * `systemd-notify --ready` sends it. Since systemd 246 it waits until the service manager has processed
 * the message (sd_notify_barrier), so the message is attributed to this unit even though the helper exits
 * at once; the unit sets NotifyAccess=all for it.
 */
import { spawn } from 'node:child_process';

export function notifyReady(status: string, warn: (msg: string) => void, env: NodeJS.ProcessEnv = process.env): void {
  if (!env.NOTIFY_SOCKET) return;
  const child = spawn('systemd-notify', ['--ready', `--status=${status}`], { stdio: 'ignore', env });
  child.on('error', (e) =>
    warn(`could not tell systemd the agent is ready (${e.message}); is systemd-notify installed?`),
  );
  child.on('exit', (code) => {
    if (code !== 0 && code !== null) warn(`systemd-notify --ready exited ${code}; check NotifyAccess=all in the unit`);
  });
}
