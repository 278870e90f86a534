/**
 * An upstream's `DPoP-Nonce` never reaches the client (forwarded-headers.ts, NOT_RELAYED): the
 * gateway checks DPoP proofs and forwards none, so a nonce of the upstream's would only make the
 * client's next proof one the gateway refuses. On every route, over HTTP/1.1 and HTTP/2; the
 * rest of the upstream's answer, its own challenge included, is relayed as it was.
 */
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import { useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway({}, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.setHeader('DPoP-Nonce', 'upstream-made-nonce');
    res.setHeader('WWW-Authenticate', 'Basic realm="upstream"');
    res.setHeader('X-Upstream', 'kept');
    res.end('{}');
  });
});

describe("an upstream's DPoP-Nonce", () => {
  it('is not relayed over HTTP/1.1; the other fields are', async () => {
    const { gw } = running;
    const response = await request(`${gw.origin}/v1/nonce-from-upstream`, { dispatcher: gw.agent });
    await response.body.text();
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-upstream']).toBe('kept');
    expect(response.headers['www-authenticate']).toBe('Basic realm="upstream"');
    expect(response.headers['dpop-nonce']).toBeUndefined();
  });

  it('is not relayed over HTTP/2', async () => {
    const session = await h2Session(running.gw.port, running.gw.certificate.cert);
    try {
      const response = await h2Request(session, { ':method': 'GET', ':path': '/v1/nonce-from-upstream-h2' });
      expect(response.status).toBe(200);
      expect(response.headers['x-upstream']).toBe('kept');
      expect(response.headers['dpop-nonce']).toBeUndefined();
    } finally {
      await closeSession(session);
    }
  });
});
