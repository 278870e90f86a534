/**
 * An upstream that answers before it read the request body (and never reads it), to an upload
 * over HTTP/2: once the answer is out, the client is told to stop sending (RST_STREAM
 * NO_ERROR, RFC 9113 §8.1) or the rest is drained; the upload never stalls at a closed flow
 * control window, and the other streams of the connection go on being served. Over HTTP/1.1
 * the same answer ends the upload too (the control).
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { constants, type ClientHttp2Session } from 'node:http2';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import { sleep, startTestGateway, type TestGateway } from '../support/harness.ts';

const UPLOAD_BYTES = 800_000;

/** Answers 200 on the request head alone and reads nothing more of that connection. */
async function startEarlyAnswerUpstream(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      const body = head.startsWith('GET') ? '{"ok":true}' : '{"early":true}';
      socket.write(
        'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n' +
          `Content-Length: ${body.length}\r\n\r\n${body}`,
      );
      // A GET has no body left unread: its connection may serve the next request.
      if (head.startsWith('GET')) {
        head = '';
        socket.on('data', onData);
        socket.resume();
      }
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

let upstream: Awaited<ReturnType<typeof startEarlyAnswerUpstream>>;
let gw: TestGateway;
beforeAll(async () => {
  upstream = await startEarlyAnswerUpstream();
  gw = await startTestGateway(upstream.url, {
    listener: { limits: { maxBodyBytes: 2_000_000 } },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

interface Upload {
  status: number;
  body: string;
  /** The upload stream closed: its code (NO_ERROR when refused after the answer, or drained). */
  closed: Promise<number>;
}

/** POSTs UPLOAD_BYTES in 16 KB writes; resolves once the answer arrived whole. */
function upload(session: ClientHttp2Session, path: string): Promise<Upload> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/octet-stream',
      'content-length': String(UPLOAD_BYTES),
    });
    const closed = new Promise<number>((done) => stream.once('close', () => done(stream.rstCode ?? -1)));
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (head) => (status = Number(head[':status'])));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString(), closed }));
    stream.on('error', (error: Error) => {
      if (status === 0) reject(error);
    });
    const piece = Buffer.alloc(16_384, 0x61);
    let sent = 0;
    const more = () => {
      while (sent < UPLOAD_BYTES && !stream.destroyed) {
        const size = Math.min(piece.length, UPLOAD_BYTES - sent);
        sent += size;
        const last = sent === UPLOAD_BYTES;
        const ok = last ? (stream.end(piece.subarray(0, size)), true) : stream.write(piece.subarray(0, size));
        if (!ok) return void stream.once('drain', more);
      }
    };
    more();
  });
}

/** Settles with the value, or with 'pending' after `ms`. */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, sleep(ms).then(() => 'pending' as const)]);

describe('an upstream that answers an upload before reading it', () => {
  it('HTTP/2: the answer arrives, the upload is refused with NO_ERROR or drained, the connection serves on', async () => {
    const session = await h2Session(gw.port, gw.certificate.cert);
    let goaway: number | undefined;
    session.on('goaway', (code: number) => (goaway = code));
    try {
      const answer = await upload(session, '/v1/upload');
      expect(answer.status).toBe(200);
      expect(answer.body).toBe('{"early":true}');
      // Bounded only so that a stall fails the test rather than timing it out.
      expect(await within(answer.closed, 3000)).toBe(constants.NGHTTP2_NO_ERROR);

      // Other streams on the same connection are served, now and for the next 6 s (a request
      // a second, so the connection is never idle): past the 5 s after which the stalled
      // upload used to end the connection with GOAWAY.
      for (let second = 0; second <= 6; second++) {
        const other = await h2Request(session, { ':path': `/v1/after?second=${second}` });
        expect(other.status).toBe(200);
        await sleep(1000);
      }
      expect(goaway).toBeUndefined();
    } finally {
      await closeSession(session);
    }
  }, 20_000);

  it('HTTP/1.1 (control): the answer arrives and the upload ends', async () => {
    const res = await request(`${gw.origin}/v1/upload`, {
      method: 'POST',
      body: Buffer.alloc(UPLOAD_BYTES, 0x61),
      headers: { 'content-type': 'application/octet-stream' },
      dispatcher: gw.agent,
    });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('{"early":true}');
  });
});
