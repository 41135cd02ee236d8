/**
 * The health file: a running `ferry agent` or `ferry serve` writes its health (what the agent's /health
 * answers, or the service's part of it) into `health.json` in its data directory every few seconds, and
 * removes it when it stops. `ferry health` reads it: a check that needs no listener (an agent with its API
 * off, `ferry serve`, a container's HEALTHCHECK, a Kubernetes exec probe), and that fails when the process
 * is gone or its event loop no longer runs its timers, which a port that still accepts does not tell.
 */
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  lstatSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { errnoWords } from '../util/errno-words.js';

export const HEALTH_FILE = 'health.json';
/** Seconds between writes. */
export const HEALTH_EVERY_S = 5;
/** A file older than this many writes belongs to a process that is stuck (or stopped without removing it). */
const STALE_AFTER_WRITES = 6;

/** What a health report holds that the one-line summary reads; the rest is carried as it is. */
export interface HealthBody {
  status: string;
  reload?: { error: string };
  sources?: { name: string; files?: number; warnings?: string[]; degraded?: boolean }[];
  sinks?: { name: string; state: string; lastError?: string }[];
  monitors?: {
    failing: { name: string; error: string }[];
    lastNotificationFailure?: { error: string };
    lastSkippedTick?: { skippedTicks: number };
    outbox?: { mails: number; reason: string };
  };
  records?: { dataset: string; failedRecords: number }[];
  database?: { reopening: boolean; lastFatal?: { error: string } };
}

interface HealthRecord {
  version: 1;
  pid: number;
  command: string;
  every: number;
  written: string;
  health: HealthBody;
}

/**
 * Writes `health()` into `<dir>/health.json` now and every few seconds, once the process has started (a
 * second ferry that fails on the same directory writes nothing), until the returned function removes it.
 * Each write goes to a file of this process's own, renamed over the last: a reader sees one whole report.
 * A write that fails is tried again at the next; a reader then finds the report stale.
 */
export function startHealthFile(dir: string, command: string, health: () => HealthBody): () => void {
  const file = join(dir, HEALTH_FILE);
  const aside = `${file}.${process.pid}.tmp`;
  const write = () => {
    try {
      const record: HealthRecord = {
        version: 1,
        pid: process.pid,
        command,
        every: HEALTH_EVERY_S,
        written: new Date().toISOString(),
        health: health(),
      };
      writeFileSync(aside, `${JSON.stringify(record)}\n`);
      renameSync(aside, file);
    } catch {
      // said by the reader: the report grows stale
    }
  };
  write();
  const timer = setInterval(write, HEALTH_EVERY_S * 1000);
  timer.unref();
  return () => {
    clearInterval(timer);
    try {
      // Only this process's report: another one may run on the directory now.
      if ((JSON.parse(readFileSync(file, 'utf8')) as HealthRecord).pid === process.pid) rmSync(file);
    } catch {
      // gone already, or not a report of ours
    }
  };
}

/** The problems a health report names, one phrase each. Pure. */
export function healthProblems(h: HealthBody): string[] {
  const out: string[] = [];
  if (h.reload) out.push(`the last config reload failed: ${h.reload.error}`);
  for (const s of h.sinks ?? []) {
    if (s.state !== 'ok') out.push(`sink ${s.name} ${s.state}${s.lastError ? `: ${s.lastError}` : ''}`);
  }
  for (const s of h.sources ?? []) {
    if (s.warnings?.length) out.push(`source ${s.name}: ${s.warnings.join('; ')}`);
    else if (s.files === 0) out.push(`source ${s.name} reads no file`);
    else if (s.degraded) out.push(`source ${s.name} is degraded`);
  }
  const m = h.monitors;
  for (const f of m?.failing ?? []) out.push(`monitor ${f.name} cannot run: ${f.error}`);
  if (m?.lastNotificationFailure) out.push(`a notification failed: ${m.lastNotificationFailure.error}`);
  if (m?.lastSkippedTick) out.push(`monitor runs fall behind (${m.lastSkippedTick.skippedTicks} skipped)`);
  if (m?.outbox) out.push(`${m.outbox.mails} mail(s) in the outbox: ${m.outbox.reason}`);
  for (const r of h.records ?? []) out.push(`${r.failedRecords} record(s) not written to ${r.dataset}`);
  if (h.database?.reopening) out.push(`the database is reopening: ${h.database.lastFatal?.error ?? ''}`);
  return out;
}

/** What `ferry health` found: the exit code, the line it prints, and the report it read. */
export interface HealthVerdict {
  code: 0 | 1;
  line: string;
  record?: HealthRecord;
}

/**
 * The report in `file`, not following a symbolic link (a check run as root reads no file it was pointed
 * at), and saying nothing of a file that is not a report but that it is not.
 */
function readRecord(file: string): HealthRecord {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  let text: string;
  try {
    if (!fstatSync(fd).isFile()) throw new Error('not a health report (not a regular file)');
    text = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  let r: Partial<HealthRecord>;
  try {
    r = JSON.parse(text) as Partial<HealthRecord>;
  } catch {
    throw new Error('not a health report');
  }
  if (
    r.version !== 1 ||
    typeof r.pid !== 'number' ||
    typeof r.command !== 'string' ||
    typeof r.every !== 'number' ||
    typeof r.written !== 'string' ||
    typeof r.health?.status !== 'string'
  ) {
    throw new Error('not a health report');
  }
  return r as HealthRecord;
}

/** Control characters written out, so that a report's text cannot drive the terminal it is printed on. */
const printable = (text: string) =>
  text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Whether a process runs with this pid (EPERM: it runs, as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Reads the health files of these data directories, the newest one that exists first, and judges it:
 * 0 while the process runs and is `ok`, `degraded` or stopping (`live`: whatever its status); 1 when no
 * file is there, its process is gone, it is stale, or it says `failing` or starting.
 */
export function judgeHealth(dirs: string[], live: boolean, now = Date.now()): HealthVerdict {
  const found: { file: string; mtime: number }[] = [];
  const problems: string[] = [];
  for (const dir of new Set(dirs)) {
    const file = join(dir, HEALTH_FILE);
    try {
      found.push({ file, mtime: lstatSync(file).mtimeMs });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') problems.push(`${file}: ${errnoWords(code) ?? (e as Error).message}`);
    }
  }
  if (found.length === 0) {
    return {
      code: 1,
      line:
        problems[0] ??
        `no health file in ${[...new Set(dirs)].join(' or ')}: ferry is not running there (or runs with another data_dir: --config)`,
    };
  }
  found.sort((a, b) => b.mtime - a.mtime);
  const { file } = found[0]!;
  let record: HealthRecord;
  try {
    record = readRecord(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ELOOP' ? 'a symbolic link (not followed)' : (errnoWords(code) ?? (e as Error).message);
    return { code: 1, line: `${file}: ${why}` };
  }
  const who = printable(`ferry ${record.command} (pid ${record.pid})`);
  const age = Math.max(0, Math.round((now - Date.parse(record.written)) / 1000));
  if (!alive(record.pid)) return { code: 1, line: `${who} is not running (health last written ${age}s ago)`, record };
  if (age > HEALTH_EVERY_S * STALE_AFTER_WRITES) {
    return { code: 1, line: `${who} has not written its health for ${age}s: it is stuck`, record };
  }
  const status = record.health.status;
  const problemsNow = healthProblems(record.health);
  const line = printable(`${status}: ${who}${problemsNow.length ? `: ${problemsNow.join('; ')}` : ''}`);
  // Starting is alive, not yet ready; failing is alive, not delivering.
  const ready = status === 'ok' || status === 'degraded' || status === 'stopping';
  return { code: live || ready ? 0 : 1, line, record };
}
