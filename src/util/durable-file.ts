/**
 * A small file replaced whole and durably: written to a temporary file, fsynced, renamed over the old one,
 * and the directory fsynced, so a crash leaves the old or the new version, never a torn one.
 */
import { mkdir, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

export async function writeFileDurably(file: string, body: string, mode = 0o600): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, 'w', mode);
  try {
    await fh.writeFile(body);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  await syncDir(dirname(file));
}

/** Makes the names in a directory durable (a file created or renamed in it survives a crash). */
export async function syncDir(path: string): Promise<void> {
  const dir = await open(path, 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
