/**
 * CORS per route over real sockets: a real gateway (HTTPS, real authentication with the
 * development issuer of a temporary data dir) and fetch (undici's, the one Node ships) with
 * the Origin and Access-Control-Request-* fields a browser sends; each answer is put through
 * the Fetch standard's CORS check as a browser would. What the config refuses:
 * cors-config.unit.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch, type Response } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { parseAssertionKeys } from '../../../shared/assertion-keys.ts';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const APP = 'https://app.example.com';
const OTHER = 'https://evil.example.net';
const PREFLIGHT_LIMIT = 3;

let upstream: RecordingUpstream;
let gw: TestGateway;
let dataDir: string;
let token: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    req.resume();
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'content-length': '11',
      vary: 'Accept-Language',
    };
    // An upstream with a CORS answer of its own: the route's policy replaces it.
    if (req.url === '/v1/own-cors') headers['access-control-allow-origin'] = '*';
    res.writeHead(200, headers);
    res.end('{"ok":true}');
  });
  dataDir = mkdtempSync(join(tmpdir(), 'portico-cors-'));
  token = await loadOrCreateDevIssuer(dataDir).sign(
    { sub: 'alice', client_id: 'cors-test', customer_id: 'cus-alice', scope: 'orders:read' },
    300,
  );
  const cors = { origins: [APP, 'http://localhost:5173'], exposeHeaders: ['ETag', 'X-Request-Id'] };
  gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/v1', upstream: upstream.url, auth: 'required', cors },
        { prefix: '/v1/limited', upstream: upstream.url, auth: 'required', cors },
        { prefix: '/v1/own-cors', upstream: upstream.url, auth: 'none', cors },
        {
          prefix: '/v1/session',
          upstream: upstream.url,
          auth: 'none',
          cors: { origins: [APP], credentials: true },
        },
        { prefix: '/v1/public', upstream: upstream.url, auth: 'none', cors: { origins: ['*'] } },
        // Under /v1, whose CORS it would inherit: it opts out to have none.
        { prefix: '/v1/plain', inherit: false, upstream: upstream.url, auth: 'none' },
      ],
      rateLimits: {
        policies: [
          {
            name: 'preflights',
            key: 'ip',
            limit: PREFLIGHT_LIMIT,
            window: '60s',
            match: { methods: ['OPTIONS'], path: '/v1/limited' },
          },
        ],
      },
    },
    { dataDir, assertionKeys: parseAssertionKeys(`test:${randomBytes(32).toString('base64')}`) },
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
  rmSync(dataDir, { recursive: true, force: true });
});
beforeEach(() => {
  upstream.records.length = 0;
});

function send(
  path: string,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  return fetch(`${gw.origin}${path}`, { ...init, dispatcher: gw.agent });
}

function preflight(path: string, origin: string, method = 'PUT', headers = 'authorization, content-type') {
  return send(path, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });
}

/** The Fetch standard's CORS check (4.10): would a browser hand this answer to the page? */
function passesCorsCheck(response: Response, origin: string, credentials = false): boolean {
  const allowOrigin = response.headers.get('access-control-allow-origin');
  if (allowOrigin === null) return false;
  if (!credentials && allowOrigin === '*') return true;
  if (allowOrigin !== origin) return false;
  return !credentials || response.headers.get('access-control-allow-credentials') === 'true';
}

const accessControlFields = (response: Response) =>
  [...response.headers.keys()].filter((name) => name.startsWith('access-control-'));

describe('preflights', () => {
  it('are answered at the edge for an allowed origin: 204 before authentication, never forwarded', async () => {
    const response = await preflight('/v1/orders/1', APP);
    expect(response.status).toBe(204);
    expect(passesCorsCheck(response, APP)).toBe(true);
    expect(response.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST, PUT, PATCH, DELETE');
    expect(response.headers.get('access-control-allow-headers')).toContain('Authorization');
    expect(response.headers.get('access-control-allow-headers')).toContain('Content-Type');
    expect(response.headers.get('access-control-max-age')).toBe('600');
    expect(response.headers.get('vary')).toBe('Origin');
    expect(response.headers.get('www-authenticate')).toBeNull();
    expect(upstream.records).toHaveLength(0);
  });

  it('from another origin get no Access-Control-* field and no 401', async () => {
    const response = await preflight('/v1/orders/1', OTHER);
    expect(response.status).toBe(403);
    expect(accessControlFields(response)).toEqual([]);
    expect(passesCorsCheck(response, OTHER)).toBe(false);
    expect(((await response.json()) as { code: string }).code).toBe('ERR_FORBIDDEN');
    expect(upstream.records).toHaveLength(0);
  });

  it('are counted by the address limit, and refused past it', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < PREFLIGHT_LIMIT + 1; i++) statuses.push((await preflight('/v1/limited', APP)).status);
    expect(statuses).toEqual([...Array<number>(PREFLIGHT_LIMIT).fill(204), 429]);
    const refused = await preflight('/v1/limited', APP);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect(refused.headers.get('ratelimit')).toContain('"preflights"');
  });

  it('on a route without cors go on as any OPTIONS request (here: to the upstream)', async () => {
    const response = await preflight('/v1/plain', APP);
    expect(accessControlFields(response)).toEqual([]);
    expect(upstream.records).toHaveLength(1);
  });
});

describe('requests from a page', () => {
  it('an allowed origin can read a refusal: 401 with Access-Control-Allow-Origin and Vary: Origin', async () => {
    const response = await send('/v1/orders', { headers: { origin: APP } });
    expect(response.status).toBe(401);
    expect(passesCorsCheck(response, APP)).toBe(true);
    expect(response.headers.get('access-control-expose-headers')).toBe('ETag, X-Request-Id');
    expect(response.headers.get('vary')).toBe('Origin');
  });

  it('an allowed origin reads the answer, with Vary: Origin merged into the upstream Vary', async () => {
    const response = await send('/v1/orders', { headers: { origin: APP, authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
    expect(passesCorsCheck(response, APP)).toBe(true);
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    expect(response.headers.get('vary')).toBe('Accept-Language, Origin');
  });

  it('another origin gets no Access-Control-* field, but Vary: Origin still', async () => {
    const response = await send('/v1/orders', {
      headers: { origin: OTHER, authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    expect(accessControlFields(response)).toEqual([]);
    expect(response.headers.get('vary')).toBe('Accept-Language, Origin');
    const noOrigin = await send('/v1/orders', { headers: { authorization: `Bearer ${token}` } });
    expect(noOrigin.headers.get('vary')).toBe('Accept-Language, Origin');
  });

  it("the route's policy replaces an upstream's own CORS fields", async () => {
    const other = await send('/v1/own-cors', { headers: { origin: OTHER } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const app = await send('/v1/own-cors', { headers: { origin: APP } });
    expect(app.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('with credentials: the origin itself and Allow-Credentials, never *', async () => {
    const response = await send('/v1/session', { headers: { origin: APP } });
    expect(passesCorsCheck(response, APP, true)).toBe(true);
    expect(response.headers.get('access-control-allow-origin')).toBe(APP);
    const pre = await preflight('/v1/session', APP);
    expect(pre.status).toBe(204);
    expect(passesCorsCheck(pre, APP, true)).toBe(true);
  });

  it('origins ["*"] without credentials: * and no Vary: Origin', async () => {
    const response = await send('/v1/public', { headers: { origin: OTHER } });
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(passesCorsCheck(response, OTHER)).toBe(true);
    expect(response.headers.get('vary')).not.toMatch(/origin/i);
  });
});
