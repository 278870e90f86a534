/**
 * The `proxy.trustProxy` value and its parsing: the config check (config/schema/upstream.ts)
 * and the edge's client address (edge/client-ip.ts) read addresses and CIDRs the same way.
 */
import { BlockList, isIP } from 'node:net';

/** The `proxy.trustProxy` value; `true` is refused by trustProxyProblems at load. */
export type TrustProxy = boolean | number | readonly string[];

/** `10.0.0.0/8` or `10.1.2.3` into the list; false when it is neither. */
export function addEntry(list: BlockList, entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.trim().split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (prefix === undefined) {
    list.addAddress(address, type);
    return true;
  }
  const bits = Number(prefix);
  if (!/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128)) return false;
  list.addSubnet(address, bits, type);
  return true;
}

/** Each problem of a trustProxy value as `proxy.trustProxy...: reason`. */
export function trustProxyProblems(trust: TrustProxy): string[] {
  if (trust === true)
    return [
      'proxy.trustProxy: true would take X-Forwarded-For from anyone, so a client could name a new address per request; ' +
        'name the proxies in front by address or CIDR (["10.0.0.0/8"]) or give their hop count (1)',
    ];
  if (!Array.isArray(trust)) return [];
  const probe = new BlockList();
  return (trust as readonly string[]).flatMap((entry, index) =>
    addEntry(probe, entry)
      ? []
      : [`proxy.trustProxy[${index}]: ${JSON.stringify(entry)} is not an IP address or CIDR`],
  );
}
