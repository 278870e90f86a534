/**
 * SIGTERM with WebSockets open, on the gateway as production runs it (a child process): every
 * one, over either client protocol, hears a close frame with 1001 (going away), the upstream
 * too, and the process exits 0 well before the drain's deadline instead of waiting it out.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createTestCertificate } from '../../support/tls.ts';
import { startGatewayProcess } from '../support/gateway-process.ts';
import { closed, isRefused, nextMessage, openH1, openH2, startEchoUpstream } from './support.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('a drain with WebSockets open', () => {
  it('closes each with 1001 on SIGTERM, both protocols and the upstream, then exits 0', async () => {
    const upstream = await startEchoUpstream();
    cleanups.push(() => upstream.close());
    const certificate = await createTestCertificate();
    const gateway = await startGatewayProcess({
      listener: {
        tls: { certFile: certificate.certFile, keyFile: certificate.keyFile },
        // Far longer than the test waits: a drain that waited for the WebSockets would time out.
        shutdownTimeoutMs: 60_000,
      },
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none', websocket: {} }],
    });
    cleanups.push(() => gateway.stop());
    const gw = { port: gateway.port, certificate };

    const h1 = await openH1(gw, '/v1/one');
    const h2 = await openH2(gw, '/v1/two');
    if (isRefused(h1) || isRefused(h2)) throw new Error('refused');
    h1.ws.send('ready');
    h2.ws.send('ready');
    expect(await nextMessage(h1.ws)).toBe('ready');
    expect(await nextMessage(h2.ws)).toBe('ready');
    const endings = [closed(h1.ws), closed(h2.ws)];

    gateway.child.kill('SIGTERM');
    const [first, second] = await Promise.all(endings);
    expect(first).toEqual({ code: 1001, reason: 'the gateway is shutting down' });
    expect(second).toEqual({ code: 1001, reason: 'the gateway is shutting down' });
    h2.session.close();
    expect(await gateway.exited).toBe(0);
    expect(upstream.closes.map((close) => close.code)).toEqual([1001, 1001]);
  });
});
