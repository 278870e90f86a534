/**
 * HPACK amplification (issue 31, RFC 7541 §7.3): a few bytes on the wire may name a large
 * header list, since an indexed field costs one byte however long the entry it names. The
 * layouts that got through, measured here: a list sent before the client acknowledged our
 * SETTINGS, which nghttp2 bounds by the pair count alone (one ~4 KB entry named 1,000 times:
 * ~4 MB decoded from ~5 KB, answered 431 only after); a list under the advertised
 * SETTINGS_MAX_HEADER_LIST_SIZE of four times `maxHeaderBytes`; and either repeated on one
 * connection, stream after stream. Each is bounded now: twice `maxHeaderBytes` per list once
 * acknowledged, a pair count before, and a connection that keeps sending lists past the limit
 * is closed (GOAWAY ENHANCE_YOUR_CALM).
 */
import type { ClientHttp2Session } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import {
  sleep,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';
import { connectRawH2, errorCodeOf, FRAME, type RawH2 } from '../support/raw-h2.ts';

const MAX_HEADER = 8192;
const ENHANCE_YOUR_CALM = 0xb;
let upstream: RecordingUpstream;
let gw: TestGateway;
beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(upstream.url, { listener: { limits: { maxHeaderBytes: MAX_HEADER } } });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

function hpackInteger(value: number, prefixBits: number, high: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([high | value]);
  const out = [high | max];
  let rest = value - max;
  for (; rest >= 128; rest = Math.floor(rest / 128)) out.push((rest % 128) + 128);
  out.push(rest);
  return Buffer.from(out);
}
const hpackString = (text: string) =>
  Buffer.concat([hpackInteger(text.length, 7, 0), Buffer.from(text, 'latin1')]);
/** Literal field; `indexed` adds it to the dynamic table (RFC 7541 §6.2.1), at index 62. */
const literal = (name: string, value: string, indexed = false) =>
  Buffer.concat([Buffer.from([indexed ? 0x40 : 0]), hpackString(name), hpackString(value)]);
/** The newest dynamic-table entry, `times` times: one byte each (§6.1). */
const newestEntry = (times: number) => Buffer.alloc(times, 0x80 | 62);
const request = (path: string) =>
  Buffer.concat([
    literal(':method', 'GET'),
    literal(':scheme', 'https'),
    literal(':authority', 'localhost'),
    literal(':path', path),
  ]);

/** One header block in HEADERS and CONTINUATION frames (END_STREAM set). */
function headerFrames(streamId: number, block: Buffer): Buffer {
  const frames: Buffer[] = [];
  for (let at = 0; at < block.length; at += 16_384) {
    const piece = block.subarray(at, at + 16_384);
    const head = Buffer.alloc(9);
    head.writeUIntBE(piece.length, 0, 3);
    head[3] = at === 0 ? FRAME.HEADERS : FRAME.CONTINUATION;
    head[4] = (at === 0 ? 0x1 : 0) | (at + 16_384 >= block.length ? 0x4 : 0);
    head.writeUInt32BE(streamId, 5);
    frames.push(head, piece);
  }
  return Buffer.concat(frames);
}

/** A raw connection that has acknowledged the gateway's SETTINGS (they bind from then on). */
async function acknowledged(): Promise<RawH2> {
  const raw = await connectRawH2(gw.port, gw.certificate.cert);
  await raw.waitFor((f) => f.type === FRAME.SETTINGS && (f.flags & 0x1) === 0);
  await sleep(50);
  return raw;
}

/** What came back on `streamId`: its answer's first byte (0x88 is `:status 200`), or the reset. */
const answerOf = (raw: RawH2, streamId: number) =>
  raw.waitFor((f) => f.streamId === streamId && (f.type === FRAME.HEADERS || f.type === FRAME.RST_STREAM));

describe('the decoded header list is bounded by size', () => {
  it('advertises twice maxHeaderBytes as SETTINGS_MAX_HEADER_LIST_SIZE', async () => {
    const session: ClientHttp2Session = await h2Session(gw.port, gw.certificate.cert);
    try {
      expect(session.remoteSettings.maxHeaderListSize).toBe(2 * MAX_HEADER);
    } finally {
      await closeSession(session);
    }
  });

  it('before the SETTINGS ACK: one 4 KB entry named 1,000 times (~4 MB from ~5 KB) is reset, never decoded whole', async () => {
    const raw = await connectRawH2(gw.port, gw.certificate.cert);
    try {
      // Written before the gateway's SETTINGS can have been read, let alone acknowledged.
      raw.socket.write(
        headerFrames(
          1,
          Buffer.concat([
            request('/v1/amplified'),
            literal('x-a', 'a'.repeat(4000), true),
            newestEntry(1000),
          ]),
        ),
      );
      const answer = await answerOf(raw, 1);
      expect(answer?.type).toBe(FRAME.RST_STREAM);
      expect(errorCodeOf(answer!)).toBe(ENHANCE_YOUR_CALM);
    } finally {
      raw.close();
    }
    expect(upstream.records.filter((r) => r.url === '/v1/amplified')).toEqual([]);
  });

  it('after it: a list of 6 names of one 4 KB entry (~24 KB, under the old bound) is reset', async () => {
    const raw = await acknowledged();
    try {
      raw.socket.write(
        headerFrames(
          1,
          Buffer.concat([request('/v1/list'), literal('x-a', 'a'.repeat(4000), true), newestEntry(5)]),
        ),
      );
      const answer = await answerOf(raw, 1);
      expect(answer?.type).toBe(FRAME.RST_STREAM);
      expect(errorCodeOf(answer!)).toBe(ENHANCE_YOUR_CALM);
    } finally {
      raw.close();
    }
  });

  it('a connection that keeps sending lists past the limit is closed after a few (GOAWAY ENHANCE_YOUR_CALM)', async () => {
    const raw = await acknowledged();
    try {
      // Each list ~12 KB decoded: past maxHeaderBytes (a 431), within the per-list bound; the
      // entry is added once, then each stream names it in ~30 bytes.
      const frames = [
        headerFrames(
          1,
          Buffer.concat([request('/v1/r'), literal('x-a', 'a'.repeat(3000), true), newestEntry(3)]),
        ),
      ];
      for (let i = 1; i < 40; i++)
        frames.push(headerFrames(1 + 2 * i, Buffer.concat([request('/v1/r'), newestEntry(4)])));
      raw.socket.write(Buffer.concat(frames));
      const goaway = await raw.waitFor((f) => f.type === FRAME.GOAWAY);
      expect(goaway === undefined ? 'no GOAWAY' : errorCodeOf(goaway)).toBe(ENHANCE_YOUR_CALM);
      await raw.closed;
      const answered = raw.frames.filter((f) => f.type === FRAME.HEADERS && f.streamId > 0).length;
      expect(answered).toBeLessThanOrEqual(4);
    } finally {
      raw.close();
    }
    // The gateway serves the next connection.
    const session = await h2Session(gw.port, gw.certificate.cert);
    try {
      expect((await h2Request(session, { ':path': '/v1/after' })).status).toBe(200);
    } finally {
      await closeSession(session);
    }
  });

  it('a list within maxHeaderBytes, named from the dynamic table, is served (control)', async () => {
    const raw = await acknowledged();
    try {
      raw.socket.write(
        headerFrames(
          1,
          Buffer.concat([request('/v1/control'), literal('x-a', 'a'.repeat(2000), true), newestEntry(2)]),
        ),
      );
      const answer = await answerOf(raw, 1);
      expect(answer?.type).toBe(FRAME.HEADERS);
      expect(answer?.payload[0]).toBe(0x88);
    } finally {
      raw.close();
    }
  });
});
