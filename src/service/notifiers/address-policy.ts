/**
 * Where notifiers may send: a notifier's URL is a user's, and the service's own network position is not
 * theirs to borrow. Link-local addresses (cloud metadata services answer there) and the other metadata
 * addresses are refused always; `service.notifiers.allow_networks`, when set, is the only place a
 * receiver may be, and `deny_networks` takes ranges out. Loopback and private ranges are allowed by
 * default: a monitor on a host often alerts a receiver on the same host or network.
 *
 * The check is on the addresses a name resolves to, as the connection is made (a name that resolves
 * elsewhere later is checked again), not on the URL's text.
 */
import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';

/** Never a receiver: link-local (metadata at 169.254.169.254), this-network, multicast, reserved, and the metadata addresses of clouds that use others. */
const ALWAYS_REFUSED = [
  '0.0.0.0/8',
  '169.254.0.0/16',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '100.100.100.200/32',
  '::/128',
  'fe80::/10',
  'ff00::/8',
  'fd00:ec2::254/128',
];

export class AddressRefused extends Error {}

export interface AddressPolicy {
  /** Why an address may not be sent to, or undefined when it may. */
  refusal(address: string): string | undefined;
  /** dns.lookup with the refused addresses left out (an error when none is left), for an HTTP agent. */
  lookup: typeof dnsLookup;
}

function blockList(cidrs: readonly string[], key: string): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net, bits] = cidr.split('/');
    const type = isIP(net ?? '') === 6 ? 'ipv6' : 'ipv4';
    if (
      !isIP(net ?? '') ||
      bits === undefined ||
      !/^\d{1,3}$/.test(bits) ||
      Number(bits) > (type === 'ipv6' ? 128 : 32)
    )
      throw new Error(`${key}: "${cidr}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`);
    list.addSubnet(net!, Number(bits), type);
  }
  return list;
}

/** Checks a list of CIDRs from the config; the problem as a sentence (the caller names the key), or undefined. */
export function cidrProblem(cidrs: readonly string[]): string | undefined {
  try {
    blockList(cidrs, '');
    return undefined;
  } catch (e) {
    return (e as Error).message.replace(/^: /, '');
  }
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail included), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '');
  const v4 = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(2).map(Number) as [number, number, number, number];
    text = `${v4[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const front = part(head);
  const back = part(tail);
  const groups = [...front, ...Array<number>(Math.max(0, 8 - front.length - back.length)).fill(0), ...back];
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * The IPv4 address an IPv6 one carries, where the network would deliver to it: mapped (::ffff:0:0/96),
 * translated (::ffff:0:0:0/96), compatible (::/96, but :: and ::1), NAT64 (64:ff9b::/96, 64:ff9b:1::/48)
 * and 6to4 (2002::/16). Each is checked as the IPv4 address it reaches too.
 */
function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (!g) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return v4(g[6]!, g[7]!);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return v4(g[6]!, g[7]!);
  if (zero(0, 6) && (g[6] !== 0 || g[7]! > 1)) return v4(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && (zero(2, 6) || g[2] === 1)) return v4(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!);
  return undefined;
}

/** The forms of an address to check: itself, and the IPv4 address it carries if it is an IPv6 one that does. */
function forms(raw: string): { address: string; type: 'ipv4' | 'ipv6' }[] {
  const address = raw.replace(/^\[|\]$/g, '');
  if (isIP(address) !== 6) return [{ address, type: 'ipv4' }];
  const v4 = embeddedIpv4(address);
  return [{ address, type: 'ipv6' }, ...(v4 ? [{ address: v4, type: 'ipv4' as const }] : [])];
}

export function addressPolicy(allow: readonly string[], deny: readonly string[]): AddressPolicy {
  const always = blockList(ALWAYS_REFUSED, 'built-in');
  const allowed = allow.length ? blockList(allow, 'service.notifiers.allow_networks') : undefined;
  const denied = blockList(deny, 'service.notifiers.deny_networks');
  const refusal = (raw: string): string | undefined => {
    for (const { address, type } of forms(raw)) {
      if (always.check(address, type))
        return `${address} is a link-local, metadata or reserved address, where a notifier never sends`;
      if (allowed && !allowed.check(address, type)) return `${address} is outside service.notifiers.allow_networks`;
      if (denied.check(address, type)) return `${address} is inside service.notifiers.deny_networks`;
    }
    return undefined;
  };
  const lookup = ((hostname: string, options: unknown, callback: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (
      err: Error | null,
      address?: string | LookupAddress[],
      family?: number,
    ) => void;
    const opts = (typeof options === 'object' && options !== null ? options : {}) as { all?: boolean };
    dnsLookup(hostname, { ...opts, all: true }, (err, addresses) => {
      if (err) return cb(err);
      const ok = addresses.filter((a) => refusal(a.address) === undefined);
      if (ok.length === 0) {
        const why = addresses.map((a) => refusal(a.address)).join('; ');
        return cb(new AddressRefused(`${hostname}: ${why}`));
      }
      if (opts.all) return cb(null, ok);
      return cb(null, ok[0]!.address, ok[0]!.family);
    });
  }) as typeof dnsLookup;
  return { refusal, lookup };
}
