/**
 * The cache key holds the authority (RFC 9111 section 2: the key is the method and the target
 * URI, host included). The gateway forwards the client's Host (or :authority) upstream in
 * X-Forwarded-Host and Forwarded: an answer built from it must never reach a client that
 * addressed another authority. From the attacker's side, over real sockets.
 */
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCacheGateway, type CacheGateway } from './support/cache-gateway.ts';
import { startOrigin, type TestOrigin } from './support/origin.ts';

let origin: TestOrigin;

/** One raw HTTP/1.1 exchange, for request forms an HTTP client library will not send. */
function rawGet(url: string, head: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}
let gateway: CacheGateway;

beforeEach(async () => {
  // An upstream that builds links from the forwarded host, as many frameworks do.
  origin = await startOrigin((request) => ({
    headers: { 'cache-control': 'public, max-age=60', 'content-type': 'text/plain' },
    body: `next: https://${String(request.headers['x-forwarded-host'])}${request.path}?page=2`,
  }));
  gateway = await startCacheGateway({ upstream: origin.url });
});

afterEach(async () => {
  await gateway.close();
  await origin.close();
});

describe('cache key and authority', () => {
  it('never serves an answer stored for a forged Host to a client of another authority', async () => {
    const poisoned = await gateway.get('/v1/things/1', { host: 'evil.example' });
    expect(poisoned.body).toContain('https://evil.example/');
    const victim = await gateway.get('/v1/things/1', { host: 'api.example.com' });
    expect(victim.body).not.toContain('evil.example');
    expect(victim.body).toContain('https://api.example.com/');
    expect(victim.headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(origin.count('/v1/things/1')).toBe(2);
  });

  it('keys an absolute-form target by the authority it names, the one forwarded, not by Host', async () => {
    // RFC 9112 section 3.2.2: the target's authority takes the place of Host, and is what the
    // gateway forwards; a Host naming the victim's authority must not put the answer there.
    const poisoned = await rawGet(
      gateway.url,
      'GET https://evil.example/v1/things/1 HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n',
    );
    expect(poisoned).toContain('https://evil.example/');
    const victim = await gateway.get('/v1/things/1', { host: 'api.example.com' });
    expect(victim.body).not.toContain('evil.example');
    expect(victim.body).toContain('https://api.example.com/');
    expect(origin.count('/v1/things/1')).toBe(2);
  });

  it('keys the authority as normalised: letter case and the default port name one origin', async () => {
    await gateway.get('/v1/things/1', { host: 'api.example.com' });
    for (const host of ['API.Example.COM', 'api.example.com:443']) {
      const again = await gateway.get('/v1/things/1', { host });
      expect(again.headers['cache-status']).toMatch(/^Portico; hit/);
    }
    expect(origin.count('/v1/things/1')).toBe(1);
  });

  it('invalidates and purges a path under every authority it was stored for', async () => {
    const hosts = ['api.example.com', 'other.example', 'evil.example'];
    for (const host of hosts) await gateway.get('/v1/things/1', { host });
    expect(origin.count('/v1/things/1')).toBe(3);
    const write = await gateway.send('POST', '/v1/things/1', { host: 'api.example.com' }, 'x');
    expect(write.status).toBe(200);
    for (const host of hosts)
      expect((await gateway.get('/v1/things/1', { host })).headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(origin.count('/v1/things/1')).toBe(7);
    expect(gateway.cache.purge('/v1/things')).toBe(3);
    for (const host of hosts)
      expect((await gateway.get('/v1/things/1', { host })).headers['cache-status']).toMatch(/fwd=uri-miss/);
  });
});
