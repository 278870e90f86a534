/**
 * The `proxy.trustProxy` value, its parsing, and whether a connection's peer is a trusted
 * proxy: the config check (config/schema/upstream.ts), the edge's client address
 * (edge/client-ip.ts) and the forwarded headers (upstream/forwarded-headers.ts) read addresses
 * and CIDRs the same way.
 */
import { BlockList, isIP } from 'node:net';

/** The `proxy.trustProxy` value; `true` is refused by trustProxyProblems at load. */
export type TrustProxy = boolean | number | readonly string[];

/** What the peer checks read of a request: its socket's address. */
export interface Peer {
  readonly socket: { readonly remoteAddress?: string | undefined };
}

/** `10.0.0.0/8` or `10.1.2.3` into the list; false when it is neither. */
function addEntry(list: BlockList, entry: string): boolean {
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

/**
 * A socket address as the gateway states it: a dual-stack listener reports IPv4 peers as
 * `::ffff:a.b.c.d`, and upstreams, logs and the audit expect `a.b.c.d`.
 */
export function unmappedAddress(address: string): string {
  return address.startsWith('::ffff:') ? address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '') : address;
}

/** The address of the peer this gateway talks to (what it states in X-Forwarded-For). */
export function peerAddress(req: Peer): string {
  return unmappedAddress(req.socket.remoteAddress ?? 'unknown');
}

/** Whether `address` is one of the named proxies. */
function listMatcher(entries: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const entry of entries) addEntry(list, entry);
  return (address) => {
    const family = isIP(address);
    return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };
}

const matchers = new WeakMap<readonly string[], (address: string) => boolean>();
/** Whether `address` is one of the named proxies, the list parsed once per list. */
export function matcherOf(entries: readonly string[]): (address: string) => boolean {
  let matcher = matchers.get(entries);
  if (matcher === undefined) matchers.set(entries, (matcher = listMatcher(entries)));
  return matcher;
}

/** Whether the connection comes from a proxy whose forwarding headers are believed. */
export function trustsPeer(trust: TrustProxy, req: Peer): boolean {
  if (typeof trust === 'number') return true;
  return Array.isArray(trust) && matcherOf(trust as readonly string[])(peerAddress(req));
}
