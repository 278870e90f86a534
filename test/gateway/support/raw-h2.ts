/**
 * A raw HTTP/2 client for frames no well-behaved client sends: node:http2 refuses to encode
 * connection-specific or unknown pseudo-header fields, and paces its own resets. Headers go
 * out as HPACK literals without indexing (RFC 7541 §6.2.2), so no encoder state is needed;
 * answers are read as frames (a problem's JSON arrives whole in DATA, no HPACK decoding).
 */
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, GOAWAY: 7, CONTINUATION: 9 } as const;
const MAX_FRAME = 16384;
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

export interface RawH2 {
  socket: TLSSocket;
  frames: Frame[];
  /** Sends a HEADERS frame (END_HEADERS always; END_STREAM when `end`). */
  headers(streamId: number, fields: readonly (readonly [string, string])[], end?: boolean): void;
  data(streamId: number, body: Buffer | string, end?: boolean): void;
  reset(streamId: number, code?: number): void;
  /** Resolves once a frame matching `test` arrived, or the connection closed (undefined). */
  waitFor(test: (frame: Frame) => boolean, timeoutMs?: number): Promise<Frame | undefined>;
  /** The DATA of one stream, as text. */
  bodyOf(streamId: number): string;
  closed: Promise<void>;
  close(): void;
}

/** Opens a TLS connection offering only `h2`, sends the preface and an empty SETTINGS. */
export async function connectRawH2(port: number, ca: string): Promise<RawH2> {
  const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2'] });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  const frames: Frame[] = [];
  const waiters = new Set<() => void>();
  let pending = Buffer.alloc(0);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const write = (type: number, flags: number, streamId: number, payload: Buffer) => {
    if (!socket.destroyed) socket.write(frame(type, flags, streamId, payload));
  };
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const received: Frame = {
        type: pending[3]!,
        flags: pending[4]!,
        streamId: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + length),
      };
      pending = pending.subarray(9 + length);
      frames.push(received);
      if (received.type === FRAME.SETTINGS && (received.flags & FLAG.ACK) === 0)
        write(FRAME.SETTINGS, FLAG.ACK, 0, Buffer.alloc(0));
    }
    for (const wake of waiters) wake();
  });
  socket.once('close', () => {
    for (const wake of waiters) wake();
  });
  socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))]));

  return {
    socket,
    frames,
    closed,
    headers(streamId, fields, end = true) {
      const block = Buffer.concat(fields.map(([name, value]) => literal(name, value)));
      // Within the default SETTINGS_MAX_FRAME_SIZE: the rest of a big block in CONTINUATIONs.
      const pieces: Buffer[] = [];
      for (let at = 0; at < block.length || pieces.length === 0; at += MAX_FRAME)
        pieces.push(block.subarray(at, at + MAX_FRAME));
      pieces.forEach((piece, i) => {
        const last = i === pieces.length - 1 ? FLAG.END_HEADERS : 0;
        if (i === 0) write(FRAME.HEADERS, last | (end ? FLAG.END_STREAM : 0), streamId, piece);
        else write(FRAME.CONTINUATION, last, streamId, piece);
      });
    },
    data(streamId, body, end = true) {
      write(FRAME.DATA, end ? FLAG.END_STREAM : 0, streamId, Buffer.from(body));
    },
    reset(streamId, code = 0x8 /* CANCEL */) {
      const payload = Buffer.alloc(4);
      payload.writeUInt32BE(code);
      write(FRAME.RST_STREAM, 0, streamId, payload);
    },
    waitFor(test, timeoutMs = 5000) {
      return new Promise((resolve) => {
        const check = () => {
          const found = frames.find(test);
          if (found !== undefined || socket.destroyed) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          resolve(undefined);
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    bodyOf(streamId) {
      return Buffer.concat(
        frames.filter((f) => f.type === FRAME.DATA && f.streamId === streamId).map((f) => f.payload),
      ).toString();
    },
    close() {
      socket.destroy();
    },
  };
}

/** The error code of a RST_STREAM or GOAWAY frame. */
export function errorCodeOf(frame: Frame): number {
  return frame.type === FRAME.GOAWAY ? frame.payload.readUInt32BE(4) : frame.payload.readUInt32BE(0);
}

/** The usual request fields for `path` on this test gateway. */
export function requestFields(path: string, method = 'GET'): [string, string][] {
  return [
    [':method', method],
    [':scheme', 'https'],
    [':authority', 'localhost'],
    [':path', path],
  ];
}

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([head, payload]);
}

/** Literal header field without indexing, new name, no Huffman coding. */
function literal(name: string, value: string): Buffer {
  return Buffer.concat([Buffer.from([0]), hpackString(name), hpackString(value)]);
}

function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, 'latin1');
  return Buffer.concat([hpackInteger(bytes.length, 7), bytes]);
}

/** RFC 7541 §5.1 integer with an N-bit prefix (the H bit, here 0, sits above it). */
function hpackInteger(value: number, prefixBits: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([value]);
  const out = [max];
  let rest = value - max;
  while (rest >= 128) {
    out.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  out.push(rest);
  return Buffer.from(out);
}
