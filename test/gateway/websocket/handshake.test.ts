/**
 * WebSockets through the gateway, handshake and echo, with real sockets end to end: ws as the
 * client over HTTP/1.1 Upgrade and over an HTTP/2 extended CONNECT stream, both over TLS, and
 * ws as the upstream, reached over HTTP/1.1. The handshake passes the stages any request does:
 * authentication (401) and rate limits (429) refuse it before the upstream hears of it, an
 * origin the route does not allow is 403, and a route without `websocket` never upgrades.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import { parseAssertionKeys } from '../../../shared/assertion-keys.ts';
import { IDENTITY_HEADER, verifyAssertion } from '../../../shared/identity-assertion.ts';
import { startTestGateway, type TestGateway } from '../support/harness.ts';
import {
  closed,
  isRefused,
  nextMessage,
  openH1,
  openH2,
  startEchoUpstream,
  type EchoUpstream,
} from './support.ts';

let upstream: EchoUpstream;
let gw: TestGateway;
let dataDir: string;
let token: string;
const assertionKeys = parseAssertionKeys(`test:${randomBytes(32).toString('base64')}`);

beforeAll(async () => {
  upstream = await startEchoUpstream();
  dataDir = mkdtempSync(join(tmpdir(), 'portico-ws-'));
  token = await loadOrCreateDevIssuer(dataDir).sign(
    { sub: 'alice', client_id: 'ws', customer_id: 'cus-alice', scope: 'orders:read' },
    300,
  );
  gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        {
          prefix: '/v1/chat',
          upstream: upstream.url,
          auth: 'none',
          websocket: { origins: ['https://app.example'] },
        },
        { prefix: '/v1/private', upstream: upstream.url, auth: 'required', websocket: {} },
        { prefix: '/v1/limited', upstream: upstream.url, auth: 'none', rateLimits: ['two'], websocket: {} },
        { prefix: '/v1/plain', upstream: upstream.url, auth: 'none' },
      ],
      rateLimits: { policies: [{ name: 'two', scope: 'route', key: 'ip', limit: 2, window: '60s' }] },
    },
    { dataDir, assertionKeys },
  );
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a WebSocket over HTTP/1.1 Upgrade', () => {
  it('echoes through the gateway, text and binary, and closes as the client asked', async () => {
    const opened = await openH1(gw, '/v1/chat/room?x=1', { protocols: ['chat.v2', 'chat.v1'] });
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    const { ws, headers } = opened;
    // The upstream chose the first subprotocol; the gateway said so to the client.
    expect(headers['sec-websocket-protocol']).toBe('chat.v2');
    expect(headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    ws.send('hello');
    expect(await nextMessage(ws)).toBe('hello');
    const binary = new Promise<{ data: Buffer; isBinary: boolean }>((resolve) =>
      ws.once('message', (data: Buffer, isBinary: boolean) => resolve({ data, isBinary })),
    );
    ws.send(Buffer.from([0, 1, 2, 255]));
    expect(await binary).toEqual({ data: Buffer.from([0, 1, 2, 255]), isBinary: true });
    const upstreamSaw = upstream.handshakes.at(-1)!;
    expect(upstreamSaw.url).toBe('/v1/chat/room?x=1');
    expect(upstreamSaw.headers['x-forwarded-proto']).toBe('https');
    expect(upstreamSaw.headers['sec-websocket-protocol']).toBe('chat.v2,chat.v1');
    const ending = closed(ws);
    ws.close(4000, 'done');
    expect(await ending).toEqual({ code: 4000, reason: 'done' });
    await until(() => upstream.closes.some((close) => close.code === 4000 && close.reason === 'done'));
  });

  it('asserts the authenticated caller upstream, and refuses one without a token with 401 before the upstream hears of it', async () => {
    const before = upstream.handshakes.length;
    const refused = await openH1(gw, '/v1/private/feed');
    expect(isRefused(refused) && refused.status).toBe(401);
    expect(isRefused(refused) && JSON.parse(refused.body).code).toBe('ERR_UNAUTHENTICATED');
    expect(upstream.handshakes.length).toBe(before);

    const opened = await openH1(gw, '/v1/private/feed', { headers: { authorization: `Bearer ${token}` } });
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    const seen = upstream.handshakes.at(-1)!;
    expect(seen.headers.authorization).toBeUndefined();
    const asserted = verifyAssertion(assertionKeys, seen.headers[IDENTITY_HEADER] as string, {
      method: 'GET',
      target: '/v1/private/feed',
    });
    expect(asserted.ok && asserted.principal.subject).toBe('alice');
    opened.ws.close();
  });

  it("counts handshakes against the route's rate limits: the third in the window is 429", async () => {
    const statuses: (number | 'open')[] = [];
    for (let i = 0; i < 3; i++) {
      const outcome = await openH1(gw, '/v1/limited/x');
      if (isRefused(outcome)) statuses.push(outcome.status);
      else {
        statuses.push('open');
        outcome.ws.close();
      }
    }
    expect(statuses).toEqual(['open', 'open', 429]);
  });

  it('refuses an origin the route does not allow with 403, and takes an allowed one', async () => {
    const refused = await openH1(gw, '/v1/chat/room', { origin: 'https://evil.example' });
    expect(isRefused(refused) && refused.status).toBe(403);
    const allowed = await openH1(gw, '/v1/chat/room', { origin: 'https://app.example' });
    expect(isRefused(allowed)).toBe(false);
    if (!isRefused(allowed)) allowed.ws.close();
  });

  it('never upgrades on a route without `websocket`: a 400 problem, and nothing reaches the upstream', async () => {
    const before = upstream.handshakes.length;
    const refused = await openH1(gw, '/v1/plain/x');
    expect(isRefused(refused) && refused.status).toBe(400);
    expect(isRefused(refused) && JSON.parse(refused.body).detail).toMatch(/does not take WebSocket/);
    expect(upstream.handshakes.length).toBe(before);
  });
});

describe('a WebSocket over HTTP/2 (RFC 8441 extended CONNECT)', () => {
  it('echoes through the gateway on one stream, the upstream reached over HTTP/1.1', async () => {
    const opened = await openH2(gw, '/v1/chat/h2');
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    const { ws, session } = opened;
    ws.send('over h2');
    expect(await nextMessage(ws)).toBe('over h2');
    expect(upstream.handshakes.at(-1)!.url).toBe('/v1/chat/h2');
    const ending = closed(ws);
    ws.close(1000, 'bye');
    expect(await ending).toEqual({ code: 1000, reason: 'bye' });
    session.close();
  });

  it('refuses on a route without `websocket` with a 400 problem, and a missing token with 401', async () => {
    const plain = await openH2(gw, '/v1/plain/x');
    expect(isRefused(plain) && plain.status).toBe(400);
    plain.session.close();
    const anonymous = await openH2(gw, '/v1/private/x');
    expect(isRefused(anonymous) && anonymous.status).toBe(401);
    anonymous.session.close();
  });
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(check()).toBe(true);
}
