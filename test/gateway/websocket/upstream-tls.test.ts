/**
 * A WebSocket's upstream hop over TLS and mutual TLS, with the settings the proxy uses for the
 * origin (`proxy.upstreamTls`): the CA verified, the gateway's client certificate presented;
 * an upstream whose certificate does not verify is a 502 at the handshake, never a plain hop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestPki, type TestPki } from '../../support/internal-pki.ts';
import { startTestGateway, type TestGateway } from '../support/harness.ts';
import { closed, isRefused, nextMessage, openH1, openH2, startEchoUpstream } from './support.ts';

let pki: TestPki;
let stranger: TestPki;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  pki = await createTestPki('ws-ca');
  stranger = await createTestPki('ws-stranger');
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function gatewayTo(url: string, ca: TestPki): Promise<TestGateway> {
  const gw = await startTestGateway(url, {
    routes: [{ prefix: '/v1', upstream: url, auth: 'none', websocket: {} }],
    proxy: {
      upstreamTls: [
        { origin: url, caFile: ca.caFile, certFile: pki.client.certFile, keyFile: pki.client.keyFile },
      ],
    },
  });
  cleanups.push(() => gw.close());
  return gw;
}

describe('the upstream hop of a WebSocket', () => {
  it('speaks mutual TLS: the gateway presents its client certificate, over both client protocols', async () => {
    const upstream = await startEchoUpstream({ tls: { ...pki.server, ca: pki.ca.cert } });
    cleanups.push(() => upstream.close());
    const gw = await gatewayTo(upstream.url, pki);

    const h1 = await openH1(gw, '/v1/mtls');
    if (isRefused(h1)) throw new Error(`refused: ${h1.status} ${h1.body}`);
    h1.ws.send('over mTLS');
    expect(await nextMessage(h1.ws)).toBe('over mTLS');
    const h1Closed = closed(h1.ws);
    h1.ws.close();
    await h1Closed;

    const h2 = await openH2(gw, '/v1/mtls');
    if (isRefused(h2)) throw new Error(`refused: ${h2.status} ${h2.body}`);
    h2.ws.send('over h2 and mTLS');
    expect(await nextMessage(h2.ws)).toBe('over h2 and mTLS');
    const h2Closed = closed(h2.ws);
    h2.ws.close();
    await h2Closed;
    h2.session.close();

    expect(upstream.handshakes.map((handshake) => handshake.peer)).toEqual([
      'portico-gateway',
      'portico-gateway',
    ]);
  });

  it('speaks TLS to an upstream that asks no client certificate', async () => {
    const upstream = await startEchoUpstream({ tls: pki.server, hello: 'welcome' });
    cleanups.push(() => upstream.close());
    const gw = await gatewayTo(upstream.url, pki);
    const opened = await openH1(gw, '/v1/tls');
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    expect(await nextMessage(opened.ws)).toBe('welcome');
    opened.ws.close();
  });

  it('refuses the handshake with 502 when the upstream certificate is not from the configured CA', async () => {
    const upstream = await startEchoUpstream({ tls: stranger.server });
    cleanups.push(() => upstream.close());
    const gw = await gatewayTo(upstream.url, pki);
    const refused = await openH1(gw, '/v1/untrusted');
    expect(isRefused(refused) && refused.status).toBe(502);
    expect(upstream.handshakes).toEqual([]);
  });
});
