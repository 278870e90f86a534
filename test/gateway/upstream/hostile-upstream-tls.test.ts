/**
 * Hostile upstream over TLS: faults of the TLS layer after an answer began (close_notify, a
 * TCP reset, a stray alert, a record that does not decrypt). The client sees a cut on either
 * protocol (HTTP/1.1: the connection; HTTP/2: RST_STREAM INTERNAL_ERROR), never an answer that
 * looks whole, on an uncached and a cached route; the gateway then serves the next request.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestPki, type TestPki } from '../../support/internal-pki.ts';
import { closeSession, h2Session } from '../support/h2-client.ts';
import { askH2 } from '../support/h2-outcome.ts';
import { rawRequest, sleep, startTestGateway, type TestGateway } from '../support/harness.ts';
import { head } from '../support/hostile-cases.ts';
import { startHostileUpstream, type Answer, type HostileUpstream } from '../support/hostile-upstream.ts';

/** Head (cacheable) and 10 of 100 bytes, then the fault after 100 ms. */
const midBody =
  (fault: (socket: Socket, raw: Socket) => void): Answer =>
  async (socket, _request, raw) => {
    socket.write(
      head('HTTP/1.1 200 OK', 'Cache-Control: max-age=60', 'Content-Length: 100') + 'x'.repeat(10),
    );
    await sleep(100);
    fault(socket, raw);
  };

/** A TLS record header: content type, TLS 1.2 on the wire, length. */
const record = (type: number, payload: Buffer) =>
  Buffer.concat([Buffer.from([type, 0x03, 0x03, payload.length >> 8, payload.length & 0xff]), payload]);

const CASES: [string, Answer][] = [
  ['close-notify-mid-body', midBody((socket) => socket.end())],
  ['reset-mid-body', midBody((_socket, raw) => raw.resetAndDestroy())],
  // A fatal alert (internal_error) in plaintext, where TLS 1.3 only takes encrypted records.
  ['alert-mid-body', midBody((_socket, raw) => raw.write(record(21, Buffer.from([2, 80]))))],
  // An application-data record that does not decrypt (bad_record_mac), the connection kept.
  ['garbage-record-mid-body', midBody((_socket, raw) => raw.write(record(23, randomBytes(48))))],
  [
    'chunked-then-close-notify',
    async (socket) => {
      socket.write(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked') + '2\r\nok\r\n');
      await sleep(100);
      socket.end();
    },
  ],
];

let pki: TestPki;
let upstream: HostileUpstream;
let gw: TestGateway;
beforeAll(async () => {
  pki = await createTestPki('hostile-tls');
  upstream = await startHostileUpstream(new Map(CASES), pki.server);
  gw = await startTestGateway(upstream.url, {
    routes: [
      { prefix: '/plain', upstream: upstream.url, auth: 'none' },
      { prefix: '/cached', upstream: upstream.url, auth: 'none', cache: true },
    ],
    proxy: {
      responseTimeoutMs: 1000,
      bodyTimeoutMs: 1000,
      upstreamTls: [{ origin: upstream.url, caFile: pki.caFile }],
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  if (pki !== undefined) rmSync(pki.dir, { recursive: true, force: true });
});

/** HTTP/1.1 with Connection: close: whole only with all of its Content-Length. */
async function askHttp1(path: string): Promise<number | 'cut'> {
  const answer = await rawRequest(
    gw.port,
    gw.certificate.cert,
    `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
    10_000,
  );
  const length = answer.headers['content-length'];
  const whole =
    length !== undefined
      ? Buffer.byteLength(answer.body, 'latin1') === Number(length)
      : answer.headers['transfer-encoding'] !== 'chunked' || answer.body.endsWith('0\r\n\r\n');
  return whole ? answer.status : 'cut';
}

describe.each(['plain', 'cached'])('TLS faults mid-body, behind the %s route', (route) => {
  it.each(CASES.map(([name]) => name))('%s: HTTP/1.1 sees the connection cut', async (name) => {
    expect(await askHttp1(`/${route}/${name}?via=h1`)).toBe('cut');
    expect(await askHttp1(`/${route}/ok?after=${name}&via=h1`)).toBe(200);
  });

  it.each(CASES.map(([name]) => name))('%s: HTTP/2 sees RST_STREAM INTERNAL_ERROR', async (name) => {
    const session = await h2Session(gw.port, gw.certificate.cert);
    try {
      const answer = await askH2(session, `/${route}/${name}?via=h2`);
      expect(answer.outcome).toBe('cut');
      expect(String(answer.headers['cache-status'] ?? '')).not.toMatch(/stored/);
      const after = await askH2(session, `/${route}/ok?after=${name}&via=h2`);
      expect(after.outcome).toBe(200);
      expect(after.body).toBe('{"ok":true}');
    } finally {
      await closeSession(session);
    }
  });
});

it('the TLS upstream serves a good answer (control)', async () => {
  expect(await askHttp1('/plain/ok?control')).toBe(200);
});
