/**
 * The service's own limits reach the client as themselves through the gateway: a body the
 * service refuses is its 413, never a 502, and a connection that was promised keep-alive is
 * not reset afterwards. Bodies between the service's 64 KiB cap and the gateway's 1 MiB cap,
 * with Content-Length and chunked, each five times on fresh connections.
 */
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPortico, type Portico } from './support/portico.ts';

let portico: Portico;
let token: string;
beforeAll(async () => {
  portico = await startPortico();
  token = await portico.token('cust-body-limits');
});
afterAll(async () => {
  await portico?.close();
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}
interface Exchange {
  answers: Answer[];
  /** How the gateway left the connection when the client had nothing more to send. */
  ending: 'still open' | 'closed' | 'reset';
}

/** Parses one complete Content-Length-framed answer off the front of `data`, if there is one. */
function takeAnswer(data: Buffer): { answer: Answer; rest: Buffer } | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (data.length < end + 4 + length) return undefined;
  const body = data.subarray(end + 4, end + 4 + length).toString();
  return {
    answer: { status: Number(statusLine.split(' ')[1]), headers, body },
    rest: data.subarray(end + 4 + length),
  };
}

/** Sends `requests` on one TLS connection, each after the answer to the one before. */
function exchange(requests: Buffer[]): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: portico.gateway.addresses.https.port,
      ca: portico.ca,
      servername: 'localhost',
    });
    const answers: Answer[] = [];
    let ending: Exchange['ending'] = 'still open';
    let data: Buffer = Buffer.alloc(0);
    let next = 0;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ answers, ending });
    };
    const timer = setTimeout(done, 15_000);
    const sendNext = () => {
      const request = requests[next++];
      // Nothing more to send: a short wait shows whether the gateway closes or resets.
      if (request === undefined) setTimeout(done, 200);
      else socket.write(request);
    };
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      for (let taken = takeAnswer(data); taken !== undefined; taken = takeAnswer(data)) {
        answers.push(taken.answer);
        data = taken.rest;
        sendNext();
      }
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET') ending = 'reset';
    });
    socket.on('end', () => {
      if (ending === 'still open') ending = 'closed';
    });
    socket.on('close', done);
    socket.once('secureConnect', sendNext);
  });
}

function orderBody(size: number): string {
  const order = { items: [{ sku: 'SKU-1', quantity: 1, unit_price: 1 }], currency: 'EUR' };
  return JSON.stringify({ ...order, pad: 'x'.repeat(size) });
}

function post(size: number, framing: 'content-length' | 'chunked'): Buffer {
  const body = orderBody(size);
  const head = `POST /v1/orders HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n`;
  if (framing === 'content-length') {
    return Buffer.from(`${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  }
  const chunks = body.match(/[^]{1,65536}/g) ?? [];
  const encoded = chunks.map((chunk) => `${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`).join('');
  return Buffer.from(`${head}Transfer-Encoding: chunked\r\n\r\n${encoded}0\r\n\r\n`);
}

const list = () =>
  Buffer.from(`GET /v1/orders?limit=1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n\r\n`);

describe('a body the service refuses, through the gateway', () => {
  describe.each(['content-length', 'chunked'] as const)('sent with %s', (framing) => {
    it.each([70_000, 200_000, 500_000, 950_000, 1_000_000])(
      'of %i bytes is its 413 problem, and the same connection then serves a good request',
      async (size) => {
        for (let round = 0; round < 5; round++) {
          const { answers, ending } = await exchange([post(size, framing), list()]);
          expect(answers.map((answer) => answer.status)).toEqual([413, 200]);
          const [refused] = answers as [Answer];
          expect(refused.headers['content-type']).toBe('application/problem+json');
          expect(JSON.parse(refused.body)).toMatchObject({ status: 413, code: 'ERR_PAYLOAD_TOO_LARGE' });
          expect(refused.headers['connection']).toBe('keep-alive');
          expect(ending).toBe('still open');
        }
      },
    );
  });
});
