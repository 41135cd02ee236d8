/**
 * Real journal files for the journald source's tests, written by systemd's own tooling: entries in the
 * journal export format piped into systemd-journal-remote (Debian's systemd-journal-remote package), which
 * appends them to `<dir>/remote.journal`; journalctl then reads that directory as it reads /var/log/journal.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const JOURNAL_REMOTE = '/lib/systemd/systemd-journal-remote';

/** A field's value: text, bytes (written in the binary form), or several values of one field. */
export type Value = string | Buffer | string[];

const BOOT = '0123456789abcdef0123456789abcdef';
let clock = BigInt(Date.now()) * 1000n;

/** One entry in the export format: `FIELD=value` lines, and a binary value as its length and bytes. */
function exportEntry(fields: Record<string, Value>): Buffer {
  clock += 1n;
  const parts: Buffer[] = [];
  const all: Record<string, Value> = {
    __REALTIME_TIMESTAMP: String(clock),
    __MONOTONIC_TIMESTAMP: String(clock % 1_000_000_000n),
    _BOOT_ID: BOOT,
    ...fields,
  };
  for (const [k, value] of Object.entries(all)) {
    for (const v of Array.isArray(value) ? value : [value]) field(parts, k, v);
  }
  parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

function field(parts: Buffer[], k: string, v: string | Buffer): void {
  if (typeof v === 'string' && !v.includes('\n')) {
    parts.push(Buffer.from(`${k}=${v}\n`));
    return;
  }
  const bytes = typeof v === 'string' ? Buffer.from(v) : v;
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(bytes.length));
  parts.push(Buffer.from(`${k}\n`), size, bytes, Buffer.from('\n'));
}

/** Appends entries to the journal in `dir`; the realtime stamps increase by a microsecond an entry. */
export function writeJournal(dir: string, entries: Record<string, Value>[]): void {
  const r = spawnSync(JOURNAL_REMOTE, [`--output=${join(dir, 'remote.journal')}`, '-'], {
    input: Buffer.concat(entries.map(exportEntry)),
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`systemd-journal-remote failed (${r.status}): ${r.stderr || r.error?.message}`);
}
