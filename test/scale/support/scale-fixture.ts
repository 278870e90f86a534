/**
 * What the scale-out tests share: gateway processes (`node gateway/main.ts`) in front of one
 * cacheable upstream, real ES256 tokens from a JWKS file, signed API keys, and one HTTPS agent.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Agent, request } from 'undici';
import { mintApiKey } from '../../../gateway/identity/api-key.ts';
import type { HmacKey } from '../../../shared/data-dir-secrets.ts';
import { startGatewayProcess, type GatewayProcess } from '../../gateway/support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../../gateway/support/harness.ts';
import { createTestCertificate, type TestCertificate } from '../../support/tls.ts';

const ISSUER = 'https://issuer.portico.test';
const AUDIENCE = 'portico-test';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

export interface ScaleFixture {
  /** A real access token of `customerId`. */
  token(customerId: string): Promise<string>;
  /** A signed API key of `customerId` (both gateways verify it) and its id, for revocation. */
  apiKey(customerId: string): { key: string; id: string };
  /** Starts a gateway process; `rateLimits` is the config's section; stopped by `close`. */
  gateway(
    rateLimits: Record<string, unknown>,
    env: Record<string, string>,
    options?: { nodeArgs?: readonly string[] },
  ): Promise<GatewayProcess>;
  /** A gateway config of this fixture's certificate and issuer; routes to its upstream by default. */
  config(rateLimits: Record<string, unknown>, routes?: Record<string, unknown>[]): Record<string, unknown>;
  /**
   * `authorization` is sent as is (`Bearer ...`, `ApiKey ...`); `at` is a port on localhost or
   * `address:port`.
   */
  call(
    at: number | string,
    authorization: string,
    path?: string,
    method?: string,
    options?: { body?: string; timeoutMs?: number },
  ): Promise<Reply & { body: string }>;
  /** Polls `/readyz` until 200; resolves the ms it took, or rejects after `timeoutMs`. */
  untilReady(adminPort: number, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Reads are cacheable for a minute in the caller's own partition (targeted at the gateway by
 * Portico-Cache-Control); writes are not (and so invalidate what they target).
 */
function cacheableUpstream(): Promise<RecordingUpstream> {
  let version = 0;
  return startRecordingUpstream((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') res.setHeader('portico-cache-control', 'max-age=60');
      else {
        version++;
        res.setHeader('cache-control', 'no-store');
      }
      res.end(JSON.stringify({ version }));
    });
  });
}

export async function startScaleFixture(): Promise<ScaleFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'portico-scale-'));
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const kid = randomUUID();
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(
    jwksFile,
    JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' }] }),
  );
  const signing: HmacKey = { kid: 'scale', secret: randomBytes(32) };
  const certificate: TestCertificate = await createTestCertificate();
  const upstream = await cacheableUpstream();
  const agent = new Agent({ connect: { ca: certificate.cert, servername: 'localhost' }, connections: 32 });
  const processes: GatewayProcess[] = [];

  const config = (rateLimits: Record<string, unknown>) => ({
    listener: { tls: { certFile: certificate.certFile, keyFile: certificate.keyFile } },
    routes: [{ prefix: '/v1', upstream: upstream.url, cache: true }],
    auth: { jwt: { jwksFile, issuer: ISSUER, audience: AUDIENCE } },
    rateLimits,
  });

  return {
    token: (customerId) =>
      new SignJWT({ customer_id: customerId, scope: 'orders:read orders:write', client_id: 'scale' })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setSubject(`user-${customerId}`)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(privateKey),
    apiKey(customerId) {
      const { key, claims } = mintApiKey(signing, { customerId, scopes: ['orders:read'] });
      return { key, id: claims.id };
    },
    config: (rateLimits, routes) => ({ ...config(rateLimits), ...(routes === undefined ? {} : { routes }) }),
    async gateway(rateLimits, env, options = {}) {
      const started = await startGatewayProcess(
        config(rateLimits),
        { PORTICO_APIKEY_SIGNING_KEYS: `${signing.kid}:${signing.secret.toString('base64')}`, ...env },
        options.nodeArgs ?? [],
      );
      processes.push(started);
      return started;
    },
    async call(at, authorization, path = '/v1/orders', method = 'GET', options = {}) {
      const origin = typeof at === 'number' ? `https://localhost:${at}` : `https://${at}`;
      const response = await request(`${origin}${path}`, {
        method: method as 'GET',
        headers: {
          authorization,
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        dispatcher: agent,
        ...(options.body === undefined ? {} : { body: options.body }),
        ...(options.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(options.timeoutMs) }),
      });
      const body = await response.body.text();
      return { status: response.statusCode, headers: response.headers, body };
    },
    async untilReady(adminPort, timeoutMs) {
      const started = Date.now();
      while (Date.now() - started < timeoutMs) {
        const status = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 200) return Date.now() - started;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`/readyz on ${adminPort} not 200 within ${timeoutMs} ms`);
    },
    async close() {
      await Promise.all(processes.splice(0).map((p) => p.stop()));
      await upstream.close();
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(certificate.dir, { recursive: true, force: true });
    },
  };
}

export const LIMIT = 30;

/** One policy of LIMIT per customer; failed authentications are not what these tests throttle. */
export const policy = (onStoreFailure: 'deny' | 'memory' | 'allow') => ({
  onStoreFailure,
  // Exactness is the point: on a loaded machine a slow answer must not count as a failure.
  storeTimeoutMs: 1000,
  authFailures: { limit: 1_000_000, window: '60s' },
  policies: [{ name: 'default', key: 'customer', limit: LIMIT, window: '60s' }],
});

export const freshCustomer = () => `cus_${randomBytes(5).toString('hex')}`;

/**
 * Caches a read on `reader`, writes the same path through `writer`, then reads it on `reader`
 * until it is no longer served from the cache (for up to a second): its Cache-Status then.
 */
export async function invalidationCrosses(
  fixture: ScaleFixture,
  writer: GatewayProcess,
  reader: GatewayProcess,
): Promise<string> {
  const auth = `Bearer ${await fixture.token(freshCustomer())}`;
  const path = `/v1/items/${randomUUID()}`;
  const status = async () => String((await fixture.call(reader.port, auth, path)).headers['cache-status']);
  await status();
  if (!/^Portico; hit/.test(await status())) throw new Error(`${path} was not cached on the reader`);
  const written = await fixture.call(writer.port, auth, path, 'POST');
  if (written.status !== 200) throw new Error(`the write answered ${written.status}`);
  let after = await status();
  for (let i = 0; i < 50 && !after.includes('fwd=uri-miss'); i++) {
    await new Promise((r) => setTimeout(r, 20));
    after = await status();
  }
  return after;
}
