/**
 * The client address under each `proxy.trustProxy` form, from the request a socket delivers:
 * IPv4, IPv6 and IPv4-mapped peers, CIDRs of either family, chains of proxies, hop counts past
 * the chain's length, and entries that are not addresses.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createClientIp } from '../../gateway/edge/client-ip.ts';
import { trustProxyProblems, trustsPeer } from '../../gateway/foundation/trust-proxy.ts';

const req = (peer: string, forwardedFor?: string | string[]) =>
  ({
    socket: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

describe('createClientIp', () => {
  it('false: the peer, whatever the header says', () => {
    expect(createClientIp(false)(req('::ffff:192.0.2.1', '198.51.100.9'))).toBe('192.0.2.1');
  });

  it('a list: the first address from the right that is not a named proxy, only from a named peer', () => {
    const clientIp = createClientIp(['10.0.0.0/8', '2001:db8::/32']);
    expect(clientIp(req('10.1.2.3', '198.51.100.9, 203.0.113.7, 10.9.9.9'))).toBe('203.0.113.7');
    expect(clientIp(req('::ffff:10.1.2.3', ['198.51.100.9', '203.0.113.7']))).toBe('203.0.113.7');
    expect(clientIp(req('2001:db8::5', '2001:db9::1'))).toBe('2001:db9::1');
    // Not from a named proxy: the header is the client's own claim.
    expect(clientIp(req('192.0.2.1', '203.0.113.7'))).toBe('192.0.2.1');
    // Every hop a named proxy: the leftmost; no header: the peer.
    expect(clientIp(req('10.1.2.3', '10.0.0.1, 10.0.0.2'))).toBe('10.0.0.1');
    expect(clientIp(req('10.1.2.3'))).toBe('10.1.2.3');
    // An entry that is no address is not a named proxy: it is what the proxy was told.
    expect(clientIp(req('10.1.2.3', 'garbage'))).toBe('garbage');
  });

  it('a hop count: N from the right of the header and the peer, the leftmost past its length', () => {
    expect(createClientIp(1)(req('10.1.2.3', '198.51.100.9, 203.0.113.7'))).toBe('203.0.113.7');
    expect(createClientIp(2)(req('10.1.2.3', '198.51.100.9, 203.0.113.7'))).toBe('198.51.100.9');
    expect(createClientIp(5)(req('10.1.2.3', '203.0.113.7'))).toBe('203.0.113.7');
    expect(createClientIp(1)(req('10.1.2.3'))).toBe('10.1.2.3');
  });

  it('true is refused; a list entry that is no address or CIDR is named by its index', () => {
    expect(() => createClientIp(true)).toThrow(/trustProxy/);
    expect(
      trustProxyProblems(['10.0.0.0/8', '10.0.0.0/33', 'example.com', '::1/129', '1.2.3.4/8/1']),
    ).toEqual([
      expect.stringMatching(/^proxy\.trustProxy\[1\]: /),
      expect.stringMatching(/^proxy\.trustProxy\[2\]: /),
      expect.stringMatching(/^proxy\.trustProxy\[3\]: /),
      expect.stringMatching(/^proxy\.trustProxy\[4\]: /),
    ]);
    expect(trustProxyProblems(false)).toEqual([]);
    expect(trustProxyProblems(2)).toEqual([]);
  });

  it('trustsPeer: only a named peer, or every peer under a hop count', () => {
    expect(trustsPeer(['127.0.0.1'], req('::ffff:127.0.0.1'))).toBe(true);
    expect(trustsPeer(['127.0.0.1'], req('127.0.0.2'))).toBe(false);
    expect(trustsPeer(1, req('192.0.2.1'))).toBe(true);
    expect(trustsPeer(false, req('127.0.0.1'))).toBe(false);
  });
});
