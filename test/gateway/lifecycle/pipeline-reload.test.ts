/**
 * A config reload swaps the whole pipeline while the gateway serves (gateway.reconfigure, what
 * `npm run -s reload`, SIGHUP and a file change run): routes added, changed and removed under
 * continuous traffic on kept-alive HTTP/1.1 and HTTP/2 connections with no failed request; a
 * request in flight finishes on the route it started on; a pipeline that cannot be built keeps
 * the running one; auth and CORS settings take effect on the next request.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { Agent, request } from 'undici';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../gateway/config/load.ts';
import type { GatewayConfig } from '../../../gateway/config/schema/gateway.ts';
import { parseAssertionKeys } from '../../../shared/assertion-keys.ts';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import { startRecordingUpstream, startTestGateway, type TestGateway } from '../support/harness.ts';

// Authenticated requests go upstream with a signed identity assertion.
const assertionKeys = parseAssertionKeys(`test:${randomBytes(32).toString('base64')}`);
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An upstream that names itself and the path it was asked for. */
async function namedUpstream(name: string, hold?: (req: IncomingMessage, res: ServerResponse) => boolean) {
  const upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    if (hold?.(req, res)) return;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ upstream: name, url: req.url }));
  });
  cleanups.push(() => upstream.close());
  return upstream;
}

async function gatewayWith(config: Record<string, unknown>): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'portico-reload-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const gw = await startTestGateway('http://127.0.0.1:9', config, { dataDir, assertionKeys });
  cleanups.push(() => gw.close());
  return gw;
}

/** The config a reload would build: the harness's certificate, `config` on top. */
function parsed(gw: TestGateway, config: Record<string, unknown>): GatewayConfig {
  const { certFile, keyFile } = gw.certificate;
  return parseConfig({ ...config, listener: { tls: { certFile, keyFile } } }).config;
}

async function getJson(gw: TestGateway, path: string, headers: Record<string, string> = {}) {
  const response = await request(`${gw.origin}${path}`, { dispatcher: gw.agent, headers });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, body: text };
}

/**
 * Requests `path` without pause on one HTTP/1.1 keep-alive connection and one HTTP/2 session
 * until stopped; every answer that is not a 200, and every transport error, is a failure.
 */
async function continuousTraffic(gw: TestGateway, path: string) {
  const h1 = new Agent({ connect: { ca: gw.certificate.cert, servername: 'localhost' }, connections: 1 });
  const h2: ClientHttp2Session = await h2Session(gw.port, gw.certificate.cert);
  const failures: string[] = [];
  const seen: { h1: string[]; h2: string[] } = { h1: [], h2: [] };
  let running = true;
  const h1Loop = (async () => {
    while (running) {
      try {
        const response = await request(`${gw.origin}${path}`, { dispatcher: h1 });
        const body = await response.body.text();
        if (response.statusCode !== 200) failures.push(`h1 ${response.statusCode} ${body}`);
        else seen.h1.push(body);
      } catch (error) {
        failures.push(`h1 ${(error as Error).message}`);
      }
    }
  })();
  const h2Loop = (async () => {
    while (running) {
      try {
        const response = await h2Request(h2, { ':path': path, ':method': 'GET' });
        if (response.status !== 200) failures.push(`h2 ${response.status} ${response.body}`);
        else seen.h2.push(response.body);
      } catch (error) {
        failures.push(`h2 ${(error as Error).message}`);
      }
    }
  })();
  return {
    failures,
    seen,
    /** Waits until both connections have had `count` more answers. */
    async answers(count: number) {
      const [h1At, h2At] = [seen.h1.length, seen.h2.length];
      while (seen.h1.length < h1At + count || seen.h2.length < h2At + count) {
        if (failures.length > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    async stop() {
      running = false;
      await Promise.all([h1Loop, h2Loop]);
      const h2Stayed = !h2.destroyed && !h2.closed;
      await closeSession(h2);
      await h1.close();
      return { h2Stayed };
    },
  };
}

describe('a reload swaps the pipeline under traffic', () => {
  it('adds, changes and removes routes with no failed request on kept-alive h1 and h2', async () => {
    const a = await namedUpstream('a');
    const b = await namedUpstream('b');
    const v1 = (upstream: string, extra: Record<string, unknown> = {}) => ({
      prefix: '/v1',
      upstream,
      auth: 'none',
      ...extra,
    });
    const gw = await gatewayWith({ routes: [v1(a.url)] });
    const traffic = await continuousTraffic(gw, '/v1/items');
    try {
      await traffic.answers(5);

      // Added: /v2 answers from b; /v1 is untouched.
      let swapped = await gw.gateway.reconfigure(
        parsed(gw, { routes: [v1(a.url), { prefix: '/v2', upstream: b.url, auth: 'none' }] }),
      );
      await traffic.answers(5);
      expect(JSON.parse((await getJson(gw, '/v2/things')).body)).toEqual({
        upstream: 'b',
        url: '/v2/things',
      });
      await swapped.drained;

      // Changed: /v1 goes to b now, with its prefix stripped.
      swapped = await gw.gateway.reconfigure(
        parsed(gw, {
          routes: [v1(b.url, { stripPrefix: true }), { prefix: '/v2', upstream: b.url, auth: 'none' }],
        }),
      );
      await traffic.answers(5);
      expect(JSON.parse(traffic.seen.h1.at(-1)!)).toEqual({ upstream: 'b', url: '/items' });
      expect(JSON.parse(traffic.seen.h2.at(-1)!)).toEqual({ upstream: 'b', url: '/items' });
      await swapped.drained;

      // Removed: /v2 is no route any more.
      swapped = await gw.gateway.reconfigure(parsed(gw, { routes: [v1(b.url, { stripPrefix: true })] }));
      await traffic.answers(5);
      expect((await getJson(gw, '/v2/things')).status).toBe(404);
      await swapped.drained;
    } finally {
      const { h2Stayed } = await traffic.stop();
      expect(h2Stayed).toBe(true);
    }
    expect(traffic.failures).toEqual([]);
    // Both connections answered from a before the change and from b after it.
    for (const answers of [traffic.seen.h1, traffic.seen.h2]) {
      expect(JSON.parse(answers[0]!)).toEqual({ upstream: 'a', url: '/v1/items' });
      expect(JSON.parse(answers.at(-1)!)).toEqual({ upstream: 'b', url: '/items' });
    }
  });

  it('a request in flight finishes on the route it started on; the old pipeline closes after it', async () => {
    const held: ServerResponse[] = [];
    const a = await namedUpstream('a', (req, res) => {
      if (req.url !== '/v1/slow') return false;
      held.push(res);
      return true;
    });
    const b = await namedUpstream('b');
    const gw = await gatewayWith({ routes: [{ prefix: '/v1', upstream: a.url, auth: 'none' }] });

    const slow = getJson(gw, '/v1/slow');
    while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const { drained } = await gw.gateway.reconfigure(
      parsed(gw, { routes: [{ prefix: '/v1', upstream: b.url, auth: 'none' }] }),
    );
    let closed = false;
    void drained.then(() => (closed = true));
    // The new route answers while the old one still holds its request.
    expect(JSON.parse((await getJson(gw, '/v1/fast')).body)).toEqual({ upstream: 'b', url: '/v1/fast' });
    // Held past the grace a closing pool gives its requests (build.ts, 2 s): had the old
    // pipeline closed at the swap, its pool would cut this request.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(closed).toBe(false);

    held[0]!.setHeader('Content-Type', 'application/json');
    held[0]!.end(JSON.stringify({ upstream: 'a', url: '/v1/slow', late: true }));
    const answer = await slow;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ upstream: 'a', url: '/v1/slow', late: true });
    await drained;
    expect(closed).toBe(true);
  });

  it('a pipeline that cannot be built is refused by its key, and the running one keeps serving', async () => {
    const a = await namedUpstream('a');
    const gw = await gatewayWith({ routes: [{ prefix: '/v1', upstream: a.url, auth: 'none' }] });
    const missing = join(tmpdir(), 'portico-no-such-jwks.json');
    await expect(
      gw.gateway.reconfigure(
        parsed(gw, {
          routes: [{ prefix: '/v1', upstream: a.url, auth: 'required' }],
          auth: { jwt: { issuer: 'https://idp.test', audience: 'api', jwksFile: missing } },
        }),
      ),
    ).rejects.toThrow(`auth.jwt.jwksFile: cannot read ${missing} as a JWKS: ENOENT`);
    // Still the old route, without authentication.
    const answer = await getJson(gw, '/v1/x');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ upstream: 'a', url: '/v1/x' });
  });
});

describe('settings a reload changes', () => {
  let privateKey: CryptoKey;
  let jwks: unknown;
  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] };
  });
  const tokenFor = (audience: string) =>
    new SignJWT({ sub: 'svc', customer_id: 'c1', scope: 'orders:read' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' })
      .setIssuer('https://idp.test')
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);

  it('auth: a new audience is required of the next request', async () => {
    const a = await namedUpstream('a');
    const dir = mkdtempSync(join(tmpdir(), 'portico-reload-jwks-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const jwksFile = join(dir, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify(jwks));
    const withAudience = (audience: string) => ({
      routes: [{ prefix: '/v1', upstream: a.url, auth: 'required' }],
      auth: { jwt: { issuer: 'https://idp.test', audience, jwksFile }, apiKeys: { enabled: false } },
    });
    const gw = await gatewayWith(withAudience('old-api'));
    const [oldToken, newToken] = [await tokenFor('old-api'), await tokenFor('new-api')];
    const call = (token: string) => getJson(gw, '/v1/x', { authorization: `Bearer ${token}` });
    expect((await call(oldToken)).status).toBe(200);
    expect((await call(newToken)).status).toBe(401);

    await gw.gateway.reconfigure(parsed(gw, withAudience('new-api')));
    expect((await call(newToken)).status).toBe(200);
    // The token verified a moment ago is not let through on the old audience's say-so.
    expect((await call(oldToken)).status).toBe(401);
  });

  it('CORS: a newly allowed origin is answered, the one removed is not', async () => {
    const a = await namedUpstream('a');
    const withOrigin = (origin: string) => ({
      routes: [{ prefix: '/v1', upstream: a.url, auth: 'none', cors: { origins: [origin] } }],
    });
    const gw = await gatewayWith(withOrigin('https://old.example'));
    const allowed = async (origin: string) =>
      (await getJson(gw, '/v1/x', { origin })).headers['access-control-allow-origin'];
    expect(await allowed('https://old.example')).toBe('https://old.example');
    expect(await allowed('https://new.example')).toBeUndefined();

    await gw.gateway.reconfigure(parsed(gw, withOrigin('https://new.example')));
    expect(await allowed('https://new.example')).toBe('https://new.example');
    expect(await allowed('https://old.example')).toBeUndefined();
  });
});
