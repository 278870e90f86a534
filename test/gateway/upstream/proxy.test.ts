/**
 * The proxy over real sockets: what is forwarded and what is not, upstream failures as
 * problems, pooled connections, retries, streaming in both directions, and the identity seam.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { pino } from 'pino';
import { verifyAssertion } from '../../../shared/identity-assertion.ts';
import { parseConfig } from '../../../gateway/config/load.ts';
import { buildGateway } from '../../../gateway/build.ts';
import {
  rawRequest,
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type TestGateway,
} from '../support/harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  handler?: Parameters<typeof startRecordingUpstream>[0],
  config: Record<string, unknown> = {},
) {
  const upstream = await startRecordingUpstream(handler);
  cleanups.push(() => upstream.close());
  const gw = await startTestGateway(upstream.url, config);
  cleanups.push(() => gw.close());
  return { upstream, gw };
}

function get(gw: TestGateway, path: string, options: Parameters<typeof request>[1] = {}) {
  return request(`${gw.origin}${path}`, { dispatcher: gw.agent, ...options });
}

describe('forwarding', () => {
  it('forwards method, target and body, and states who asked instead of trusting the client', async () => {
    const { upstream, gw } = await setup();
    const response = await get(gw, '/v1/orders?limit=5', {
      method: 'POST',
      body: '{"a":1}',
      headers: {
        'content-type': 'application/json',
        forwarded: 'for=6.6.6.6',
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'http',
        'portico-identity': 'v1.forged.claims.sig',
        'x-custom': 'kept',
      },
    });
    expect(response.statusCode).toBe(200);
    await response.body.text();
    const seen = upstream.records[0];
    expect(seen).toMatchObject({ method: 'POST', url: '/v1/orders?limit=5', bytes: 7, completed: true });
    expect(seen?.headers).toMatchObject({
      'content-type': 'application/json',
      'x-custom': 'kept',
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': `localhost:${gw.port}`,
      forwarded: `for=127.0.0.1;proto=https;host="localhost:${gw.port}"`,
    });
    expect(seen?.headers['portico-identity']).toBeUndefined();
    expect(seen?.rawHeaders.filter((h) => h.toLowerCase() === 'x-forwarded-for')).toHaveLength(1);
  });

  it('with trustProxy on, keeps the incoming forwarding chain and appends this hop', async () => {
    const { upstream, gw } = await setup(undefined, { proxy: { trustProxy: ['127.0.0.1'] } });
    const response = await get(gw, '/v1/x', {
      headers: { forwarded: 'for=10.0.0.1', 'x-forwarded-for': '10.0.0.1', 'x-forwarded-proto': 'https' },
    });
    await response.body.text();
    expect(upstream.records[0]?.headers).toMatchObject({
      'x-forwarded-for': '10.0.0.1, 127.0.0.1',
      forwarded: `for=10.0.0.1, for=127.0.0.1;proto=https;host="localhost:${gw.port}"`,
    });
  });

  it('strips hop-by-hop headers in both directions, including those named in Connection', async () => {
    const { upstream, gw } = await setup((req, res) => {
      res.setHeader('Connection', 'x-upstream-hop');
      res.setHeader('X-Upstream-Hop', 'secret');
      res.setHeader('Keep-Alive', 'timeout=5');
      res.setHeader('Proxy-Authenticate', 'Basic');
      res.setHeader('X-End-To-End', 'kept');
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    const response = await rawRequest(
      gw.port,
      gw.certificate.cert,
      'GET /v1/x HTTP/1.1\r\nHost: a\r\nConnection: x-client-hop, close\r\nX-Client-Hop: 1\r\nTE: trailers\r\n' +
        'Keep-Alive: timeout=9\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nUpgrade: websocket\r\nX-Kept: 1\r\n\r\n',
    );
    expect(response.status).toBe(200);
    const sent = upstream.records[0]?.headers ?? {};
    for (const name of ['x-client-hop', 'te', 'keep-alive', 'proxy-authorization', 'upgrade']) {
      expect(sent[name], name).toBeUndefined();
    }
    expect(sent['x-kept']).toBe('1');
    expect(sent['connection']).not.toMatch(/close|x-client-hop/i);
    expect(response.headers['x-upstream-hop']).toBeUndefined();
    expect(response.headers['proxy-authenticate']).toBeUndefined();
    expect(response.headers['x-end-to-end']).toBe('kept');
  });

  it('generates an X-Request-Id, sends it upstream and returns it; keeps a well-formed one; replaces a bad one', async () => {
    const { upstream, gw } = await setup((req, res) => {
      res.setHeader('X-Request-Id', 'upstream-own-id');
      req.resume();
      req.on('end', () => res.end());
    });
    const generated = await get(gw, '/v1/a');
    const id = generated.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(upstream.records[0]?.headers['x-request-id']).toBe(id);

    const kept = await get(gw, '/v1/b', { headers: { 'x-request-id': 'trace-42.abc:1' } });
    expect(kept.headers['x-request-id']).toBe('trace-42.abc:1');
    expect(upstream.records[1]?.headers['x-request-id']).toBe('trace-42.abc:1');

    const replaced = await get(gw, '/v1/c', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    await Promise.all([generated.body.text(), kept.body.text(), replaced.body.text()]);
  });

  it('relays HEAD without a body, and the next request still goes through', async () => {
    // undici closes the upstream connection after a HEAD (servers that send a body anyway).
    const { gw } = await setup();
    const head = await get(gw, '/v1/x', { method: 'HEAD' });
    expect(head.statusCode).toBe(200);
    expect(await head.body.text()).toBe('');
    const after = await get(gw, '/v1/y');
    expect(await after.body.json()).toEqual({ ok: true, bytes: 0 });
  });

  it('answers an unknown path or version with a 404 problem, segment-wise', async () => {
    const { upstream, gw } = await setup();
    for (const path of ['/v2/orders', '/v10/orders', '/', '/orders']) {
      const response = await get(gw, path);
      expect(response.statusCode, path).toBe(404);
      expect(response.headers['x-request-id']).toBeDefined();
      expect(await response.body.json()).toMatchObject({ code: 'ERR_ROUTE_NOT_FOUND', instance: path });
    }
    expect(upstream.records).toEqual([]);
  });
});

describe('upstream failures', () => {
  it('answers 502 when the upstream refuses connections, and counts it', async () => {
    const closed = await startRecordingUpstream();
    await closed.close();
    const gw = await startTestGateway(closed.url);
    cleanups.push(() => gw.close());
    const response = await get(gw, '/v1/x');
    expect(response.statusCode).toBe(502);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(await response.body.json()).toMatchObject({ code: 'ERR_BAD_GATEWAY', instance: '/v1/x' });
    const metrics = await gw.gateway.metrics.registry.metrics();
    expect(metrics).toContain(`portico_upstream_errors_total{upstream="${closed.url}",kind="refused"} 1`);
  });

  it('answers 504 when the upstream accepts but never answers', async () => {
    const { gw } = await setup(() => {}, { proxy: { responseTimeoutMs: 300 } });
    const response = await get(gw, '/v1/x');
    expect(response.statusCode).toBe(504);
    expect(await response.body.json()).toMatchObject({ code: 'ERR_GATEWAY_TIMEOUT' });
  });

  it('cuts the client connection when the upstream dies mid-body, never passing off a truncated success', async () => {
    const { gw } = await setup((req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('0123456789');
      setTimeout(() => req.socket.destroy(), 50);
    });
    const response = await get(gw, '/v1/x');
    expect(response.statusCode).toBe(200);
    await expect(response.body.text()).rejects.toThrow();
  });

  it('cuts the client connection when the upstream body stalls past bodyTimeoutMs', async () => {
    const { gw } = await setup(
      (req, res) => {
        res.writeHead(200, { 'content-length': '100' });
        res.write('0123456789');
      },
      { proxy: { bodyTimeoutMs: 300 } },
    );
    const response = await get(gw, '/v1/x');
    await expect(response.body.text()).rejects.toThrow();
    expect(gw.logs.some((line) => line['msg'] === 'response cut')).toBe(true);
  });

  const malformed: [string, string][] = [
    [
      'both Content-Length and Transfer-Encoding',
      'HTTP/1.1 200 OK\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\nLEAKED',
    ],
    ['an invalid status line', 'HTTP/1.1 2000 OK\r\nContent-Length: 6\r\n\r\nLEAKED'],
    ['garbage', 'LEAKED garbage\r\n\r\n'],
    ['a header without a colon', 'HTTP/1.1 200 OK\r\nX-Bad header\r\nContent-Length: 6\r\n\r\nLEAKED'],
  ];
  it.each(malformed)(
    'answers 502 for an upstream response with %s, never relaying it',
    async (_name, raw) => {
      const server = createNetServer((socket) => {
        socket.once('data', () => socket.end(raw));
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
      const gw = await startTestGateway(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      cleanups.push(() => gw.close());
      const response = await get(gw, '/v1/x');
      const body = await response.body.text();
      expect(response.statusCode).toBe(502);
      expect(JSON.parse(body)).toMatchObject({ code: 'ERR_BAD_GATEWAY' });
      expect(body).not.toContain('LEAKED');
    },
  );
});

describe('connections and retries', () => {
  it('a client Connection: close does not close the pooled upstream connection', async () => {
    const { upstream, gw } = await setup();
    for (let i = 0; i < 3; i++) {
      const response = await rawRequest(
        gw.port,
        gw.certificate.cert,
        'GET /v1/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
      );
      expect(response.status).toBe(200);
      expect(response.headers['connection']).toBe('close');
    }
    expect(upstream.records).toHaveLength(3);
    expect(upstream.connections.size).toBe(1);
    expect(upstream.records.every((r) => r.headers['connection'] !== 'close')).toBe(true);
  });

  it('retries an idempotent request after a connection failure, never a POST', async () => {
    let seen = 0;
    const { upstream, gw } = await setup((req, res) => {
      seen++;
      // Every odd request dies before any response byte.
      if (seen % 2 === 1) req.socket.destroy();
      else res.end('ok');
    });
    const getResponse = await get(gw, '/v1/x');
    expect(getResponse.statusCode).toBe(200);
    await getResponse.body.text();
    expect(upstream.records.map((r) => r.method)).toEqual(['GET', 'GET']);

    const postResponse = await get(gw, '/v1/x', { method: 'POST', body: 'x' });
    expect(postResponse.statusCode).toBe(502);
    await postResponse.body.text();
    expect(upstream.records.map((r) => r.method)).toEqual(['GET', 'GET', 'POST']);
  });
});

describe('streaming', () => {
  it('relays the upstream response as it arrives, not once it is complete', async () => {
    let finish: () => void = () => {};
    const { gw } = await setup((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first;');
      finish = () => res.end('last');
    });
    const response = await get(gw, '/v1/stream');
    const reader = response.body[Symbol.asyncIterator]();
    const first = (await reader.next()) as IteratorResult<Buffer>;
    expect(first.value?.toString()).toBe('first;');
    finish();
    let rest = '';
    for (let next = await reader.next(); next.done !== true; next = await reader.next())
      rest += String(next.value);
    expect(rest).toBe('last');
  });

  it('forwards the request body as it arrives, not once it is complete', async () => {
    const { upstream, gw } = await setup();
    const response = await rawRequest(gw.port, gw.certificate.cert, async (socket) => {
      socket.write(
        'POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n',
      );
      for (let i = 0; i < 50 && (upstream.records[0]?.bytes ?? 0) === 0; i++) await sleep(20);
      socket.write(`0\r\n\r\n`);
    });
    expect(upstream.records[0]?.bytes).toBe(5);
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toMatchObject({ bytes: 5 });
  });
});

describe('identity seam', () => {
  it('signs an assertion of ctx.upstream.principal with the first key, for this request only', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    const keys = [
      { kid: 'k1', secret: Buffer.alloc(32, 1) },
      { kid: 'k2', secret: Buffer.alloc(32, 2) },
    ];
    const { config } = parseConfig({
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'required' }],
      requestId: { acceptFromClient: true },
    });
    // The real pipeline, with a stand-in authenticate stage that establishes a principal.
    const gateway = await buildGateway(
      config,
      { log: pino({ level: 'silent' }), assertionKeys: keys },
      {
        stages: {
          authenticate: async (ctx, next) => {
            ctx.upstream.principal = {
              subject: 'u1',
              customerId: 'cus_1',
              scopes: ['orders:read'],
              authMethod: 'jwt',
            };
            await next();
          },
        },
      },
    );
    const server: Server = createHttpServer(gateway.handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      await new Promise((resolve) => server.close(resolve));
      await gateway.close();
    });
    const { port } = server.address() as AddressInfo;
    const response = await request(`http://127.0.0.1:${port}/v1/orders?x=1`, {
      headers: {
        'portico-identity': 'v1.k1.forged.sig',
        authorization: 'Bearer the-client-token',
        'x-request-id': 'rid-1',
      },
    });
    await response.body.text();
    // The credential stops at the edge once it has become an assertion.
    expect(upstream.records[0]?.headers['authorization']).toBeUndefined();
    const header = upstream.records[0]?.headers['portico-identity'];
    expect(typeof header).toBe('string');
    const verified = verifyAssertion([keys[1]!], header as string, {
      method: 'GET',
      target: '/v1/orders?x=1',
    });
    expect(verified.ok).toBe(false);
    const result = verifyAssertion(keys, header as string, { method: 'GET', target: '/v1/orders?x=1' });
    expect(result).toMatchObject({ ok: true, principal: { customerId: 'cus_1' }, claims: { rid: 'rid-1' } });
  });
});
