/**
 * What one HTTP/2 connection may cost: concurrent streams, requests per connection, the time
 * to a first request and between requests, a body too slow to arrive, a rapid-reset flood
 * (CVE-2023-44487), and the drain on shutdown, each against a real node:http2 client or raw
 * frames (support/raw-h2.ts).
 */
import { constants, type ClientHttp2Session } from 'node:http2';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import {
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';
import { connectRawH2, errorCodeOf, FRAME, requestFields } from '../support/raw-h2.ts';

const PROTOCOL_ERROR = 0x1;
const REFUSED_STREAM = 0x7;
const MAX_STREAMS = 3;
const MAX_REQUESTS = 5;
const MAX_RESETS = 50;
let upstream: RecordingUpstream;
let gw: TestGateway;
/** Requests to `/v1/slow` are answered after this long. */
let slowMs = 400;
let upstreamActive = 0;
let upstreamPeak = 0;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => {
    upstreamActive += 1;
    upstreamPeak = Math.max(upstreamPeak, upstreamActive);
    res.once('close', () => (upstreamActive -= 1));
    req.resume();
    req.on('error', () => {});
    const answer = () => {
      if (res.destroyed) return;
      res.setHeader('Content-Type', 'application/json');
      res.end('{"ok":true}');
    };
    req.on('end', () => (req.url === '/v1/slow' ? setTimeout(answer, slowMs) : answer()));
  });
  gw = await startTestGateway(upstream.url, {
    listener: {
      limits: {
        headersTimeoutMs: 400,
        requestTimeoutMs: 700,
        keepAliveTimeoutMs: 400,
        maxRequestsPerConnection: MAX_REQUESTS,
      },
      http2: { maxConcurrentStreams: MAX_STREAMS, maxStreamResets: MAX_RESETS },
    },
  });
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
});
beforeEach(() => {
  upstream.records.length = 0;
  slowMs = 400;
});

function goaway(session: ClientHttp2Session): Promise<number> {
  return new Promise((resolve) => session.once('goaway', (code: number) => resolve(code)));
}

describe('streams per connection', () => {
  it('advertises maxConcurrentStreams; a client honouring it never has more upstream at once', async () => {
    const session = await h2Session(gw.port, gw.certificate.cert);
    expect(session.remoteSettings.maxConcurrentStreams).toBe(MAX_STREAMS);
    upstreamPeak = 0;
    const responses = await Promise.all(
      Array.from({ length: MAX_REQUESTS }, () => h2Request(session, { ':path': '/v1/slow' })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(MAX_REQUESTS).fill(200));
    expect(upstreamPeak).toBe(MAX_STREAMS);
    await closeSession(session);
  });

  it('a client opening more streams than advertised loses the connection; the excess never goes upstream', async () => {
    const raw = await connectRawH2(gw.port, gw.certificate.cert);
    try {
      // Once our ACK of its SETTINGS is sent, exceeding the limit is a protocol error to nghttp2.
      await raw.waitFor((f) => f.type === FRAME.SETTINGS && f.flags === 0);
      await sleep(50);
      for (const id of [1, 3, 5, 7, 9]) raw.headers(id, requestFields('/v1/slow'));
      const away = await raw.waitFor(
        (f) => f.type === FRAME.GOAWAY || (f.type === FRAME.RST_STREAM && f.streamId === 9),
      );
      expect(away && errorCodeOf(away)).toBeOneOf([PROTOCOL_ERROR, REFUSED_STREAM]);
      await sleep(slowMs + 100);
      expect(upstream.records.length).toBeLessThanOrEqual(MAX_STREAMS);
    } finally {
      raw.close();
    }
  });

  it('after maxRequestsPerConnection streams, GOAWAY: those finish, the client moves on', async () => {
    slowMs = 0;
    const session = await h2Session(gw.port, gw.certificate.cert);
    const away = goaway(session);
    const responses = [];
    for (let i = 0; i < MAX_REQUESTS; i++) responses.push(await h2Request(session, { ':path': '/v1/slow' }));
    expect(responses.map((r) => r.status)).toEqual(Array(MAX_REQUESTS).fill(200));
    expect(await away).toBe(constants.NGHTTP2_NO_ERROR);
    await expect(h2Request(session, { ':path': '/v1/slow' })).rejects.toThrow();
    await closeSession(session);
    const next = await h2Session(gw.port, gw.certificate.cert);
    expect((await h2Request(next, { ':path': '/v1/slow' })).status).toBe(200);
    await closeSession(next);
  });
});

describe('time limits', () => {
  it('closes a connection that sends no request within headersTimeoutMs', async () => {
    const raw = await connectRawH2(gw.port, gw.certificate.cert);
    const started = Date.now();
    const away = await raw.waitFor((f) => f.type === FRAME.GOAWAY, 3000);
    expect(away).toBeDefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    await Promise.race([raw.closed, sleep(3000)]);
    expect(raw.socket.destroyed).toBe(true);
  });

  it('closes a connection idle for keepAliveTimeoutMs after its last answer, not while one is awaited', async () => {
    slowMs = 600;
    const session = await h2Session(gw.port, gw.certificate.cert);
    const away = goaway(session);
    // The upstream takes longer than the idle timeout: an awaited answer is not idleness.
    expect((await h2Request(session, { ':path': '/v1/slow' })).status).toBe(200);
    const answered = Date.now();
    await away;
    expect(Date.now() - answered).toBeGreaterThanOrEqual(350);
    await closeSession(session);
  });

  it('answers a body that stops arriving with 408 and does not complete the upstream request', async () => {
    const session = await h2Session(gw.port, gw.certificate.cert);
    const response = await h2Request(
      session,
      { ':method': 'POST', ':path': '/v1/x', 'content-length': '100' },
      (stream) => stream.write('only part'),
    );
    expect(response.status).toBe(408);
    expect(JSON.parse(response.body)).toMatchObject({ status: 408, code: 'ERR_REQUEST_TIMEOUT' });
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    await sleep(100);
    expect(upstream.records.every((r) => !r.completed)).toBe(true);
    await closeSession(session);
  });
});

describe('rapid reset (CVE-2023-44487)', () => {
  // No bound on requests per connection here: the reset bound alone must end the flood.
  let flood: TestGateway;
  beforeAll(async () => {
    flood = await startTestGateway(upstream.url, {
      listener: { limits: { maxRequestsPerConnection: 0 }, http2: { maxStreamResets: MAX_RESETS } },
    });
  });
  afterAll(() => flood.close());

  it('a client that opens and cancels streams fast gets GOAWAY; few of them reach the upstream', async () => {
    slowMs = 0;
    const session = await h2Session(flood.port, flood.certificate.cert);
    session.on('error', () => {});
    const away = new Promise<number>((resolve) => {
      session.once('goaway', (code: number) => resolve(code));
      session.once('close', () => resolve(-1));
    });
    // Each round's HEADERS leave before its RST_STREAMs: cancelled before they are sent,
    // node:http2 would not send the streams at all.
    let opened = 0;
    for (let round = 0; round < 100 && !session.closed && !session.destroyed; round++) {
      const streams = Array.from({ length: 20 }, (_, i) => {
        const stream = session.request({ ':path': `/v1/slow?i=${round * 20 + i}` });
        stream.on('error', () => {});
        return stream;
      });
      opened += streams.length;
      await new Promise((resolve) => setImmediate(resolve));
      for (const stream of streams) stream.close(constants.NGHTTP2_CANCEL);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const code = await Promise.race([away, sleep(3000).then(() => 'none')]);
    expect(code).not.toBe('none');
    expect(session.destroyed || session.closed).toBe(true);
    // Ended near the configured burst, not nghttp2's default of 1000, nor at what the client sent.
    expect(opened).toBeGreaterThan(MAX_RESETS);
    expect(opened).toBeLessThanOrEqual(4 * MAX_RESETS);
    await sleep(200);
    expect(upstream.records.length).toBeLessThan(2 * MAX_RESETS);
    expect(flood.logs.some((line) => line['msg'] === 'HTTP/2 connection closed on error')).toBe(true);
    session.destroy();

    const next = await h2Session(flood.port, flood.certificate.cert);
    expect((await h2Request(next, { ':path': '/v1/x' })).status).toBe(200);
    await closeSession(next);
  });

  it('the same flood in raw frames: GOAWAY, then the connection is closed', async () => {
    const raw = await connectRawH2(flood.port, flood.certificate.cert);
    let sent = 0;
    for (let round = 0; round < 40 && !raw.socket.destroyed; round++) {
      for (let k = 0; k < 10; k++) {
        raw.headers(2 * sent + 1, requestFields('/v1/x'));
        raw.reset(2 * sent + 1);
        sent += 1;
      }
      await sleep(5);
    }
    const away = await raw.waitFor((f) => f.type === FRAME.GOAWAY, 3000);
    expect(away).toBeDefined();
    await Promise.race([raw.closed, sleep(3000)]);
    expect(raw.socket.destroyed).toBe(true);
    expect(sent).toBeLessThanOrEqual(4 * MAX_RESETS);
    raw.close();
  });

  it('cancelling fewer streams than the bound is an ordinary client (control)', async () => {
    slowMs = 0;
    const session = await h2Session(flood.port, flood.certificate.cert);
    for (let i = 0; i < MAX_RESETS / 2; i++) {
      const stream = session.request({ ':path': '/v1/x' });
      stream.on('error', () => {});
      stream.close(constants.NGHTTP2_CANCEL);
    }
    await sleep(100);
    expect((await h2Request(session, { ':path': '/v1/x' })).status).toBe(200);
    expect(session.destroyed).toBe(false);
    await closeSession(session);
  });
});

describe('drain', () => {
  it('on close, an h2 request in flight is answered, the connection gets GOAWAY, the close completes', async () => {
    const draining = await startTestGateway(upstream.url, { listener: { shutdownTimeoutMs: 3000 } });
    const session = await h2Session(draining.port, draining.certificate.cert);
    const away = goaway(session);
    const inFlight = h2Request(session, { ':path': '/v1/slow' });
    await sleep(100);
    const started = Date.now();
    await draining.close();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(response.body).toBe('{"ok":true}');
    expect(await away).toBe(constants.NGHTTP2_NO_ERROR);
    expect(Date.now() - started).toBeLessThan(2500);
    await expect(h2Session(draining.port, draining.certificate.cert)).rejects.toThrow();
    session.destroy();
  });
});
