/**
 * Hostile upstream: every broken or odd HTTP/1.1 answer an upstream can give, written on a raw
 * socket, behind an uncached and a cached route. For each, what the client gets is asserted,
 * and the same gateway then serves a good request: no answer can take the gateway down, and
 * no byte of a bad answer reaches the next request.
 */
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './support/harness.ts';
import {
  okResponse,
  send,
  sendAndClose,
  sendInSteps,
  startHostileUpstream,
  type Answer,
  type HostileUpstream,
} from './support/hostile-upstream.ts';

const head = (statusLine: string, ...headers: string[]) =>
  `${statusLine}\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;

/** `cut`: the client got no complete response (headers and part of a body, then the connection closed). */
type Outcome = number | 'cut';

const CASES: [name: string, answer: Answer, expected: Outcome][] = [
  ['status-999', send(head('HTTP/1.1 999 Weird', 'Content-Length: 2') + 'hi'), 502],
  ['status-600', send(head('HTTP/1.1 600 Six', 'Content-Length: 0')), 502],
  ['status-099', send(head('HTTP/1.1 099 Low', 'Content-Length: 0')), 502],
  ['status-two-digits', send(head('HTTP/1.1 42 Short', 'Content-Length: 0')), 502],
  ['status-line-garbage', send('FOO BAR\r\n\r\n'), 502],
  // undici's parser takes any HTTP/x.y status line; the framing is HTTP/1.1's and unambiguous,
  // so the answer is relayed (as HTTP/1.1, which is what the gateway speaks).
  ['http2-version', send(head('HTTP/2.0 200 OK', 'Content-Length: 2') + 'ok'), 200],
  ['no-reason-phrase', send(head('HTTP/1.1 200', 'Content-Length: 2') + 'ok'), 200],
  [
    'switching-protocols-unasked',
    send(head('HTTP/1.1 101 Switching Protocols', 'Connection: upgrade', 'Upgrade: websocket')),
    502,
  ],
  // undici refuses a 100 Continue it did not ask for (it never sends Expect) as a bad response:
  // a 502, never the interim answer taken for the final one. 102 and 103 are relayed to the
  // client before the final answer (upstream/interim.ts), which `ask` reads past.
  ['continue-then-ok', send(head('HTTP/1.1 100 Continue') + okResponse()), 502],
  [
    'early-hints-then-ok',
    send(head('HTTP/1.1 103 Early Hints', 'Link: </a.css>; rel=preload') + okResponse()),
    200,
  ],
  [
    'two-interims-then-ok',
    send(head('HTTP/1.1 102 Processing') + head('HTTP/1.1 103 Early Hints') + okResponse()),
    200,
  ],
  ['interim-then-close', sendAndClose(head('HTTP/1.1 103 Early Hints')), 502],
  [
    'content-length-and-chunked',
    send(head('HTTP/1.1 200 OK', 'Content-Length: 2', 'Transfer-Encoding: chunked') + '2\r\nok\r\n0\r\n\r\n'),
    502,
  ],
  [
    'two-content-lengths',
    send(head('HTTP/1.1 200 OK', 'Content-Length: 2', 'Content-Length: 3') + 'okk'),
    502,
  ],
  ['content-length-not-a-number', send(head('HTTP/1.1 200 OK', 'Content-Length: two') + 'ok'), 502],
  ['content-length-negative', send(head('HTTP/1.1 200 OK', 'Content-Length: -2') + 'ok'), 502],
  [
    'content-length-huge',
    send(head('HTTP/1.1 200 OK', 'Content-Length: 99999999999999999999999') + 'ok'),
    502,
  ],
  ['closed-before-body', sendAndClose(head('HTTP/1.1 200 OK', 'Content-Length: 100')), 502],
  [
    'reset-before-body',
    async (socket) => {
      socket.write(head('HTTP/1.1 200 OK', 'Content-Length: 100'));
      await new Promise((r) => setTimeout(r, 50));
      socket.resetAndDestroy();
    },
    502,
  ],
  [
    'closed-mid-body',
    async (socket) => {
      socket.write(head('HTTP/1.1 200 OK', 'Content-Length: 100') + 'x'.repeat(10));
      await new Promise((r) => setTimeout(r, 100));
      socket.end();
    },
    'cut',
  ],
  [
    'bad-chunk-size',
    send(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked') + 'zz\r\nok\r\n0\r\n\r\n'),
    502,
  ],
  [
    'bad-chunk-later',
    sendInSteps([head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked') + '2\r\nok\r\n', 'zz\r\nok\r\n']),
    'cut',
  ],
  [
    'chunked-without-end',
    async (socket) => {
      socket.write(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked') + '2\r\nok\r\n');
      await new Promise((r) => setTimeout(r, 100));
      socket.end();
    },
    'cut',
  ],
  ['nul-in-header-value', send(head('HTTP/1.1 200 OK', 'X-Bad: a\0b', 'Content-Length: 2') + 'ok'), 502],
  ['space-in-header-name', send(head('HTTP/1.1 200 OK', 'Bad Name: x', 'Content-Length: 2') + 'ok'), 502],
  ['header-without-colon', send(head('HTTP/1.1 200 OK', 'NoColonHere', 'Content-Length: 2') + 'ok'), 502],
  [
    'oversized-headers',
    send(head('HTTP/1.1 200 OK', `X-Big: ${'a'.repeat(70_000)}`, 'Content-Length: 2') + 'ok'),
    502,
  ],
  [
    'utf8-header-value',
    send(
      Buffer.concat([
        Buffer.from('HTTP/1.1 200 OK\r\nX-Name: '),
        Buffer.from('😀', 'utf8'),
        Buffer.from('\r\nContent-Length: 2\r\n\r\nok'),
      ]),
    ),
    200,
  ],
  ['lf-only-line-ends', send('HTTP/1.1 200 OK\nContent-Length: 2\n\nok'), 502],
  ['obs-fold-header', send(head('HTTP/1.1 200 OK', 'X-Fold: a', ' b', 'Content-Length: 2') + 'ok'), 502],
  [
    'bytes-after-body',
    send(
      head('HTTP/1.1 200 OK', 'Content-Length: 2') +
        'ok' +
        head('HTTP/1.1 200 OK', 'Content-Length: 5') +
        'SMUGG',
    ),
    200,
  ],
  ['body-on-no-content', send(head('HTTP/1.1 204 No Content') + 'junk'), 204],
  [
    'reset-at-once',
    (socket) => {
      socket.resetAndDestroy();
    },
    502,
  ],
  [
    'closed-at-once',
    (socket) => {
      socket.end();
    },
    502,
  ],
  ['stall-headers', () => {}, 504],
  ['stall-mid-body', send(head('HTTP/1.1 200 OK', 'Content-Length: 100') + 'x'.repeat(10)), 'cut'],
  [
    'http10-body-until-close',
    sendAndClose(head('HTTP/1.0 200 OK', 'Content-Type: text/plain') + 'hello'),
    200,
  ],
  [
    'slow-drip-headers',
    sendInSteps(
      [...okResponse()].map((c) => c),
      2,
    ),
    200,
  ],
  [
    'trailers',
    send(
      head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked', 'Trailer: X-Sum') +
        '2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n',
    ),
    200,
  ],
];

interface ClientAnswer {
  outcome: Outcome;
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

/** One request with `Connection: close`, read until the gateway closes: complete or cut. */
function ask(port: number, ca: string, path: string): Promise<ClientAnswer> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error(`no end within 10 s for ${path}`)), 10_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString('latin1');
      // Interim (1xx) heads come before the final answer (RFC 9110 section 15.2).
      const final = raw.replace(/^(?:HTTP\/1\.1 1\d\d [^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n)+/, '');
      const end = final.indexOf('\r\n\r\n');
      if (end === -1) return resolve({ outcome: 'cut', status: 0, headers: {}, body: '', raw });
      const [statusLine = '', ...lines] = final.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const c = line.indexOf(':');
        headers[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim();
      }
      const status = Number(statusLine.split(' ')[1]);
      const rest = final.slice(end + 4);
      let complete: boolean;
      let body = rest;
      if (headers['content-length'] !== undefined)
        complete = Buffer.byteLength(rest, 'latin1') === Number(headers['content-length']);
      else if (headers['transfer-encoding'] === 'chunked') {
        complete = rest.endsWith('0\r\n\r\n');
        body = dechunk(rest);
      } else complete = status === 204 || status === 304;
      resolve({ outcome: complete ? status : 'cut', status, headers, body, raw });
    });
    socket.once('secureConnect', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
    );
  });
}

function dechunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 4 + size);
  }
}

let upstream: HostileUpstream;
let gw: TestGateway;
beforeAll(async () => {
  upstream = await startHostileUpstream(new Map(CASES.map(([name, answer]) => [name, answer])));
  gw = await startTestGateway(upstream.url, {
    routes: [
      { prefix: '/plain', upstream: upstream.url, auth: 'none' },
      { prefix: '/cached', upstream: upstream.url, auth: 'none', cache: true },
    ],
    proxy: { responseTimeoutMs: 400, bodyTimeoutMs: 400 },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const BODIES: Record<string, string> = {
  'no-reason-phrase': 'ok',
  'http2-version': 'ok',
  'early-hints-then-ok': '{"ok":true}',
  'two-interims-then-ok': '{"ok":true}',
  'bytes-after-body': 'ok',
  'http10-body-until-close': 'hello',
  'slow-drip-headers': '{"ok":true}',
  trailers: 'ok',
  'utf8-header-value': 'ok',
};

describe.each(['plain', 'cached'])('behind the %s route', (route) => {
  it.each(CASES)('%s', async (name, _answer, expected) => {
    const path = `/${route}/${name}`;
    const answer = await ask(gw.port, gw.certificate.cert, path);
    expect(answer.outcome, answer.raw.slice(0, 400)).toBe(expected);
    if (typeof expected === 'number' && expected >= 500) {
      // The gateway's own answer: a problem document, never a piece of the upstream's.
      expect(answer.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(answer.body)).toMatchObject({ status: expected });
    }
    if (expected === 200) expect(answer.body).toBe(BODIES[name]);
    expect(answer.raw).not.toContain('SMUGG');
    if (name === 'utf8-header-value')
      // Header bytes pass through as they came (latin1 in, latin1 out), never re-encoded.
      expect(Buffer.from(answer.headers['x-name'] ?? '', 'latin1')).toEqual(Buffer.from('😀', 'utf8'));

    if (route === 'cached' && expected !== 200 && expected !== 204) {
      // Nothing of a failed answer was stored: asking again goes to the upstream again.
      const before = upstream.hits.get(name) ?? 0;
      const again = await ask(gw.port, gw.certificate.cert, path);
      expect(again.outcome).toBe(expected);
      expect(upstream.hits.get(name)).toBeGreaterThan(before);
    }

    // The same gateway, still up, serves a good request, twice over a reused connection.
    for (const n of [1, 2]) {
      const after = await ask(gw.port, gw.certificate.cert, `/${route}/ok?after=${name}&n=${n}`);
      expect(after.outcome).toBe(200);
      expect(after.body).toBe('{"ok":true}');
    }
  });
});

it('answers several odd cases at once and goes on serving', async () => {
  const names = CASES.map(([name]) => name);
  const answers = await Promise.all(names.map((name) => ask(gw.port, gw.certificate.cert, `/plain/${name}`)));
  expect(answers.map((a) => a.outcome)).toEqual(CASES.map(([, , expected]) => expected));
  const after = await ask(gw.port, gw.certificate.cert, '/plain/ok?after=all');
  expect(after.body).toBe('{"ok":true}');
});
