/**
 * The host's figures as Linux writes them under /proc, read into numbers: CPU time by state (/proc/stat),
 * memory (/proc/meminfo), load (/proc/loadavg), block devices (/proc/diskstats), network interfaces
 * (/proc/net/dev) and mounted file systems (/proc/mounts). Pure: text in, numbers out, for the
 * host_metrics source (host-metrics.ts), which reads the files and names the metrics.
 */

/** Clock ticks a second in /proc/stat (USER_HZ, 100 on every Linux architecture Node runs on). */
export const USER_HZ = 100;

export const CPU_STATES = ['user', 'nice', 'system', 'idle', 'wait', 'interrupt', 'softirq', 'steal'] as const;

/** Seconds each CPU spent in each state, by CPU (`cpu0`…), from /proc/stat. */
export function parseStat(text: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const line of text.split('\n')) {
    const m = /^(cpu\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const ticks = m[2]!.trim().split(/\s+/).map(Number);
    out.set(
      m[1]!,
      CPU_STATES.map((_, i) => (ticks[i] ?? 0) / USER_HZ),
    );
  }
  return out;
}

/** /proc/meminfo's figures in bytes, by name (MemTotal, MemFree, Buffers, Cached, SReclaimable, SUnreclaim…). */
export function parseMeminfo(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]) * (line.includes('kB') ? 1024 : 1));
  }
  return out;
}

/** Memory by the states of OTel's system.memory.usage: used, free, buffered, cached, slab_reclaimable, slab_unreclaimable. */
export function memoryStates(info: Map<string, number>): Record<string, number> | undefined {
  const total = info.get('MemTotal');
  if (total === undefined) return undefined;
  const free = info.get('MemFree') ?? 0;
  const buffered = info.get('Buffers') ?? 0;
  const cached = info.get('Cached') ?? 0;
  const reclaimable = info.get('SReclaimable') ?? 0;
  const unreclaimable = info.get('SUnreclaim') ?? 0;
  return {
    used: Math.max(0, total - free - buffered - cached - reclaimable),
    free,
    buffered,
    cached,
    slab_reclaimable: reclaimable,
    slab_unreclaimable: unreclaimable,
  };
}

/** The 1, 5 and 15 minute load averages from /proc/loadavg. */
export function parseLoadavg(text: string): [number, number, number] | undefined {
  const [a, b, c] = text.trim().split(/\s+/).map(Number);
  return a === undefined || b === undefined || c === undefined || [a, b, c].some(Number.isNaN) ? undefined : [a, b, c];
}

export interface DiskFigures {
  readOps: number;
  writeOps: number;
  readBytes: number;
  writeBytes: number;
  /** Seconds the device was busy. */
  ioTime: number;
}

/** Block devices' cumulative figures from /proc/diskstats (sectors of 512 bytes); loop and ram devices left out. */
export function parseDiskstats(text: string): Map<string, DiskFigures> {
  const out = new Map<string, DiskFigures>();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 14) continue;
    const device = f[2]!;
    if (/^(loop|ram)\d/.test(device)) continue;
    out.set(device, {
      readOps: Number(f[3]),
      readBytes: Number(f[5]) * 512,
      writeOps: Number(f[7]),
      writeBytes: Number(f[9]) * 512,
      ioTime: Number(f[12]) / 1000,
    });
  }
  return out;
}

export interface NetFigures {
  rxBytes: number;
  rxPackets: number;
  rxErrors: number;
  rxDropped: number;
  txBytes: number;
  txPackets: number;
  txErrors: number;
  txDropped: number;
}

/** Network interfaces' cumulative figures from /proc/net/dev. */
export function parseNetDev(text: string): Map<string, NetFigures> {
  const out = new Map<string, NetFigures>();
  for (const line of text.split('\n')) {
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line);
    if (!m) continue;
    const f = m[2]!.trim().split(/\s+/).map(Number);
    if (f.length < 16 || f.some(Number.isNaN)) continue;
    out.set(m[1]!, {
      rxBytes: f[0]!,
      rxPackets: f[1]!,
      rxErrors: f[2]!,
      rxDropped: f[3]!,
      txBytes: f[8]!,
      txPackets: f[9]!,
      txErrors: f[10]!,
      txDropped: f[11]!,
    });
  }
  return out;
}

export interface Mount {
  device: string;
  mountpoint: string;
  type: string;
}

/** File systems that hold no disk space of their own: left out of system.filesystem.*. */
const PSEUDO = new Set([
  'proc',
  'sysfs',
  'devtmpfs',
  'devpts',
  'tmpfs',
  'cgroup',
  'cgroup2',
  'mqueue',
  'debugfs',
  'tracefs',
  'securityfs',
  'pstore',
  'bpf',
  'configfs',
  'fusectl',
  'hugetlbfs',
  'autofs',
  'binfmt_misc',
  'nsfs',
  'rpc_pipefs',
  'squashfs',
  'efivarfs',
  'ramfs',
  'selinuxfs',
]);

/** Network and FUSE file systems: a statfs of one whose server is gone can hang, so they are left out. */
const REMOTE = /^(nfs\d?|cifs|smb3?|smbfs|ceph|glusterfs|9p|afs|fuse(\..*)?)$/;

/** The mounted local file systems with space of their own, from /proc/mounts (each mount point once). */
export function parseMounts(text: string): Mount[] {
  const seen = new Set<string>();
  const out: Mount[] = [];
  // /proc/mounts writes a space, tab, newline or backslash in a path as an octal escape.
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  for (const line of text.split('\n')) {
    const [device, mountpoint, type] = line.split(' ');
    if (!device || !mountpoint || !type || PSEUDO.has(type) || REMOTE.test(type)) continue;
    const point = unescape(mountpoint);
    if (seen.has(point)) continue;
    seen.add(point);
    out.push({ device: unescape(device), mountpoint: point, type });
  }
  return out;
}
