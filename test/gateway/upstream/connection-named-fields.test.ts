/**
 * What the gateway states upstream cannot be taken away or bent by the client, from the
 * attacker's side:
 * - a client naming a field in `Connection` makes its own field of that name hop-by-hop, not
 *   the one the gateway sets: the gateway's `traceparent` and the `accept-encoding` it
 *   negotiated for a cached route still reach the upstream;
 * - a raw Host ending in a backslash (which used to leave the `Forwarded` quoted string
 *   unterminated) or holding a quote never reaches it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  rawRequest,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(upstream.url, {
    routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none', cache: true }],
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function send(head: string) {
  const before = upstream.records.length;
  const reply = await rawRequest(gw.gateway.addresses.https.port, gw.certificate.cert, `${head}\r\n\r\n`);
  expect(reply.status).toBe(200);
  expect(upstream.records.length).toBe(before + 1);
  return upstream.records.at(-1)!;
}

describe('fields the gateway sets upstream', () => {
  it('keeps its traceparent and negotiated accept-encoding when the client names them in Connection', async () => {
    const seen = await send(
      'GET /v1/a HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: br;q=0.5, gzip\r\n' +
        'Traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n' +
        'Connection: keep-alive, traceparent, accept-encoding, x-drop-me\r\nX-Drop-Me: 1',
    );
    expect(seen.headers['traceparent']).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    expect(seen.headers['accept-encoding']).toBe('gzip');
    // The client's own field it named is hop-by-hop as before.
    expect(seen.headers['x-drop-me']).toBeUndefined();
  });

  it('never lets a Host ending in a backslash or holding a quote reach the Forwarded quoted string', async () => {
    // Such a Host is no valid host: refused at the edge (400), nothing forwarded. Behind that,
    // the Forwarded value quotes `\\` and `"` (RFC 9110 §5.6.4), so no Host could end the
    // quoted string early or leave it open.
    for (const host of ['localhost\\', 'local"host']) {
      const before = upstream.records.length;
      const reply = await rawRequest(
        gw.gateway.addresses.https.port,
        gw.certificate.cert,
        `GET /v1/b HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
      );
      expect(reply.status, host).toBe(400);
      expect(upstream.records.length).toBe(before);
    }
  });
});
