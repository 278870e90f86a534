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
import {
  matcherOf,
  peerAddress,
  trustProxyProblems,
  unmappedAddress,
  type TrustProxy,
} from '../foundation/trust-proxy.ts';

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
