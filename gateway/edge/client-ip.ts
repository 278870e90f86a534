/**
 * The client's address, as rate limits and the audit log count it.
 *
 * `proxy.trustProxy` names whom X-Forwarded-For is taken from, never anyone: a client that may
 * write its own address picks a new rate-limit key per request.
 * - `false` (the default): the connection's source is the client; the header is not read.
 * - addresses and CIDRs of the proxies in front: when the connection comes from one of them,
 *   the header is read from the right, past every named proxy, and the first other address is
 *   the client (what the outermost trusted proxy appended). Entries left of it came from the
 *   client and can say anything.
 * - a hop count N: every connection comes through N proxies; the client is the address the
 *   outermost of them appended, N from the right of the header and the source together.
 */
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import type { ClientRequest } from '../pipeline/client-request.ts';
import { addEntry, trustProxyProblems, type TrustProxy } from '../foundation/trust-proxy.ts';

/**
 * A socket address as the gateway states it: a dual-stack listener reports IPv4 peers as
 * `::ffff:a.b.c.d`, and upstreams, logs and the audit expect `a.b.c.d`.
 */
export function unmappedAddress(address: string): string {
  return address.startsWith('::ffff:') ? address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '') : address;
}

/** The address of the peer this gateway talks to (what it states in X-Forwarded-For). */
export function peerAddress(req: Pick<ClientRequest, 'socket'>): string {
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
function matcherOf(entries: readonly string[]): (address: string) => boolean {
  let matcher = matchers.get(entries);
  if (matcher === undefined) matchers.set(entries, (matcher = listMatcher(entries)));
  return matcher;
}

/** Whether the connection comes from a proxy whose forwarding headers are believed. */
export function trustsPeer(trust: TrustProxy, req: Pick<ClientRequest, 'socket'>): boolean {
  if (typeof trust === 'number') return true;
  return Array.isArray(trust) && matcherOf(trust as readonly string[])(peerAddress(req));
}

/** The X-Forwarded-For entries, left to right. */
function forwardedChain(req: IncomingMessage): string[] {
  const forwarded = req.headers['x-forwarded-for'];
  const list = Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? '');
  return list
    .split(',')
    .map((entry) => unmappedAddress(entry.trim()))
    .filter((entry) => entry !== '');
}

export function createClientIp(trust: TrustProxy): (req: IncomingMessage) => string {
  if (trust === true) throw new Error(trustProxyProblems(trust)[0]);
  if (trust === false) return peerAddress;
  if (typeof trust === 'number')
    return (req) => {
      const addresses = [...forwardedChain(req), peerAddress(req)];
      return addresses[addresses.length - 1 - trust] ?? addresses[0]!;
    };
  const trusted = matcherOf(trust);
  return (req) => {
    const peer = peerAddress(req);
    if (!trusted(peer)) return peer;
    const chain = forwardedChain(req);
    for (let i = chain.length - 1; i >= 0; i--) if (!trusted(chain[i]!)) return chain[i]!;
    return chain[0] ?? peer;
  };
}
