/**
 * The forwarding fields the proxy states upstream (gateway/upstream/forwarded-headers.ts), on
 * requests no test client sends: a Host that needs quoted pairs inside `Forwarded`, an IPv6
 * peer, and a trusted balancer's fields appended to. proxy.test.ts holds the common case over
 * real sockets.
 */
import { describe, expect, it } from 'vitest';
import { forwardedHeaders } from '../../../gateway/upstream/forwarded-headers.ts';
import { UpstreamRequest } from '../../../gateway/pipeline/upstream-request.ts';

function request(rawHeaders: string[], remoteAddress: string) {
  const headers: Record<string, string> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) headers[rawHeaders[i]!.toLowerCase()] = rawHeaders[i + 1]!;
  const req = {
    rawHeaders,
    headers,
    method: 'GET',
    httpVersionMajor: 1,
    httpVersionMinor: 1,
    socket: { remoteAddress },
  };
  const upstream = UpstreamRequest.of(req, '/v1/orders', undefined, remoteAddress, null);
  upstream.requestId = 'req-1';
  return { req, upstream };
}

function fields(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  return out;
}

describe('forwarded headers', () => {
  it('escapes a quote and a backslash of Host inside Forwarded, and brackets an IPv6 peer', () => {
    const { req, upstream } = request(['Host', 'a"b\\c'], '2001:db8::1');
    const sent = fields(forwardedHeaders(upstream, req, false, 'portico'));
    expect(sent['forwarded']).toBe('for="[2001:db8::1]";proto=https;host="a\\"b\\\\c"');
    expect(sent['x-forwarded-host']).toBe('a"b\\c');
    expect(sent['x-forwarded-for']).toBe('2001:db8::1');
  });

  it("appends to a trusted balancer's fields and ignores an untrusted peer's", () => {
    const raw = [
      'Host',
      'api.example',
      'X-Forwarded-For',
      '203.0.113.9',
      'Forwarded',
      'for=203.0.113.9',
      'X-Forwarded-Proto',
      'http',
      'X-Forwarded-Host',
      'edge.example',
    ];
    const trusted = request(raw, '10.0.0.2');
    expect(
      fields(forwardedHeaders(trusted.upstream, trusted.req as never, ['10.0.0.0/8'], 'portico')),
    ).toMatchObject({
      forwarded: 'for=203.0.113.9, for=10.0.0.2;proto=https;host="api.example"',
      'x-forwarded-for': '203.0.113.9, 10.0.0.2',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'edge.example',
      'x-request-id': 'req-1',
    });
    const untrusted = request(raw, '10.0.0.2');
    expect(
      fields(forwardedHeaders(untrusted.upstream, untrusted.req as never, false, 'portico')),
    ).toMatchObject({
      forwarded: 'for=10.0.0.2;proto=https;host="api.example"',
      'x-forwarded-for': '10.0.0.2',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'api.example',
    });
  });
});
