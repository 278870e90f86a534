/**
 * The client's address, as rate limits and the audit log count it.
 *
 * Behind a trusted load balancer (`proxy.trustProxy`), the address is the last entry of
 * X-Forwarded-For: the one that balancer appended. Entries before it came from the client
 * and can say anything, so they are never used to pick a rate-limit key.
 */
import type { IncomingMessage } from 'node:http';

/** The address of the peer this gateway talks to (what it states in X-Forwarded-For). */
export function peerAddress(req: IncomingMessage): string {
  // A dual-stack listener reports IPv4 clients as `::ffff:a.b.c.d`; upstreams expect `a.b.c.d`.
  return (req.socket.remoteAddress ?? 'unknown').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
}

export function createClientIp(trustProxy: boolean): (req: IncomingMessage) => string {
  if (!trustProxy) return peerAddress;
  return (req) => {
    const forwarded = req.headers['x-forwarded-for'];
    const list = Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? '');
    const last = list.split(',').at(-1)?.trim();
    return last !== undefined && last !== '' ? last : peerAddress(req);
  };
}
