/**
 * An HTTP/2 stream the gateway answered is let go as it closes (issue 33). The progress
 * timeouts (edge/progress-timeout.ts) watched every stream until their next sweep, up to a
 * second later: in the bench's HTTP/2 hit row, thousands of answered streams a second, a heap
 * snapshot held about 2600 closed streams with their state, and the gateway's peak memory rose
 * by some 27 MiB in that row alone. Counted with V8's own census of live objects.
 */
import { connect, createSecureServer, type ClientHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { queryObjects } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { useRecordingGateway } from '../support/harness.ts';

// The default progress timeout (60 s): its sweep runs once a second.
const running = useRecordingGateway();

/** node:http2's server stream class, which it does not export: taken from a stream of our own. */
async function serverStreamClass(): Promise<abstract new (...args: never[]) => ServerHttp2Stream> {
  const server = createSecureServer({ cert: running.gw.certificate.cert, key: running.gw.certificate.key });
  let found: (abstract new (...args: never[]) => ServerHttp2Stream) | undefined;
  server.on('stream', (stream) => {
    found = stream.constructor as typeof found;
    stream.respond({ ':status': 204 });
    stream.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = connect(`https://localhost:${(server.address() as AddressInfo).port}`, {
    ca: running.gw.certificate.cert,
  });
  await answered(client, '/');
  client.close();
  await new Promise((resolve) => server.close(resolve));
  if (found === undefined) throw new Error('no server stream');
  return found;
}

function answered(session: ClientHttp2Session, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    let status = 0;
    stream.on('response', (headers) => (status = Number(headers[':status'])));
    stream.on('error', reject);
    stream.resume();
    stream.on('end', () => resolve(status));
  });
}

describe('HTTP/2 streams, once answered', () => {
  it('are let go as they close, not at the progress sweep a second later', async () => {
    const ServerStream = await serverStreamClass();
    const session = connect(running.gw.origin, { ca: running.gw.certificate.cert });
    try {
      for (let round = 0; round < 2; round++) {
        const statuses = await Promise.all(Array.from({ length: 100 }, () => answered(session, '/v1/x')));
        expect(statuses).toEqual(Array(100).fill(200));
        // The streams' own close comes a turn or two after the client read their end.
        for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
        expect(queryObjects(ServerStream, { format: 'count' }), `round ${round}`).toBeLessThan(10);
      }
    } finally {
      session.close();
    }
  });
});
