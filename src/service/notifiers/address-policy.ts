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
    if (!isIP(net ?? '') || bits === undefined || !/^\d{1,3}$/.test(bits))
      throw new Error(`${key}: "${cidr}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`);
    list.addSubnet(net!, Number(bits), type);
  }
  return list;
}

/** Checks a list of CIDRs from the config; the problem as a sentence, or undefined. */
export function cidrProblem(cidrs: readonly string[], key: string): string | undefined {
  try {
    blockList(cidrs, key);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** An IPv4 address inside IPv6 (::ffff:a.b.c.d) is checked as the IPv4 address it is. */
function unmapped(address: string): { address: string; type: 'ipv4' | 'ipv6' } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return { address: m[1]!, type: 'ipv4' };
  return { address, type: isIP(address) === 6 ? 'ipv6' : 'ipv4' };
}

export function addressPolicy(allow: readonly string[], deny: readonly string[]): AddressPolicy {
  const always = blockList(ALWAYS_REFUSED, 'built-in');
  const allowed = allow.length ? blockList(allow, 'service.notifiers.allow_networks') : undefined;
  const denied = blockList(deny, 'service.notifiers.deny_networks');
  const refusal = (raw: string): string | undefined => {
    const { address, type } = unmapped(raw.replace(/^\[|\]$/g, ''));
    if (always.check(address, type))
      return `${address} is a link-local, metadata or reserved address, where a notifier never sends`;
    if (allowed && !allowed.check(address, type)) return `${address} is outside service.notifiers.allow_networks`;
    if (denied.check(address, type)) return `${address} is inside service.notifiers.deny_networks`;
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
