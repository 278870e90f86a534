/**
 * The client's address, as rate limits and the audit log count it.
 *
 * Behind a trusted load balancer (`proxy.trustProxy`), the address is the last entry of
 * X-Forwarded-For: the one that balancer appended. Entries before it came from the client
 * and can say anything, so they are never used to pick a rate-limit key.
 */
import type { IncomingMessage } from 'node:http';

/**
 * A socket address as the gateway states it: a dual-stack listener reports IPv4 peers as
 * `::ffff:a.b.c.d`, and upstreams, logs and the audit expect `a.b.c.d`.
 */
export function unmappedAddress(address: string): string {
  return address.startsWith('::ffff:') ? address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '') : address;
}

/** The address of the peer this gateway talks to (what it states in X-Forwarded-For). */
export function peerAddress(req: IncomingMessage): string {
  return unmappedAddress(req.socket.remoteAddress ?? 'unknown');
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
