/**
 * The hostile upstream's cases (support/hostile-upstream.ts): what each writes on the raw
 * socket, and what a client of the gateway must get, whichever protocol it speaks. Shared by
 * the HTTP/1.1 and the HTTP/2 client tests, so that both hold every case.
 */
import { startTestGateway, type TestGateway } from './harness.ts';
import {
  okResponse,
  send,
  sendAndClose,
  sendInSteps,
  startHostileUpstream,
  type Answer,
  type HostileUpstream,
} from './hostile-upstream.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const head = (statusLine: string, ...headers: string[]) =>
  `${statusLine}\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;

/** `cut`: the client got no complete response (headers and part of a body, then the connection closed). */
export type Outcome = number | 'cut';

export const CASES: [name: string, answer: Answer, expected: Outcome][] = [
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
  // Issue 31: a cut after the answer began is a cut for the client on either protocol (on
  // HTTP/2 an RST_STREAM INTERNAL_ERROR, never a stream ended as if whole).
  [
    'chunked-then-reset',
    async (socket) => {
      socket.write(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked') + '2\r\nok\r\n');
      await sleep(100);
      socket.resetAndDestroy();
    },
    'cut',
  ],
  // A body delimited by the close that stops arriving: the body timeout cuts it.
  ['http10-body-stalls', send(head('HTTP/1.0 200 OK', 'Content-Type: text/plain') + 'hel'), 'cut'],
  // The framing error arrives with the first body bytes, before anything went to the client.
  [
    'bad-chunk-in-first-packet',
    send(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked') + '2\r\nok\r\nzz\r\nok\r\n'),
    502,
  ],
  // Transfer codings the gateway cannot decode (RFC 9112 §6.1): their body is not the content.
  [
    'te-gzip-chunked',
    send(head('HTTP/1.1 200 OK', 'Transfer-Encoding: gzip, chunked') + '2\r\nok\r\n0\r\n\r\n'),
    502,
  ],
  [
    'te-chunked-twice',
    send(head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked, chunked') + '2\r\nok\r\n0\r\n\r\n'),
    502,
  ],
  [
    'te-chunked-two-fields',
    send(
      head('HTTP/1.1 200 OK', 'Transfer-Encoding: chunked', 'Transfer-Encoding: chunked') +
        '2\r\nok\r\n0\r\n\r\n',
    ),
    502,
  ],
  ['te-identity', sendAndClose(head('HTTP/1.1 200 OK', 'Transfer-Encoding: identity') + 'ok'), 502],
  // Cacheable answers whose body streams: the head must not claim `stored` (RFC 9211) for a
  // body not yet whole. One ends whole (and is then stored), one is cut (and is not).
  [
    'chunked-slow-cacheable',
    sendInSteps([
      head('HTTP/1.1 200 OK', 'Cache-Control: max-age=60', 'Transfer-Encoding: chunked') + '2\r\nok\r\n',
      '0\r\n\r\n',
    ]),
    200,
  ],
  [
    'chunked-cacheable-then-close',
    async (socket) => {
      socket.write(
        head('HTTP/1.1 200 OK', 'Cache-Control: max-age=60', 'Transfer-Encoding: chunked') + '2\r\nok\r\n',
      );
      await sleep(100);
      socket.end();
    },
    'cut',
  ],
];

/** The body each case answered 200 must deliver, whole. */
export const BODIES: Record<string, string> = {
  'no-reason-phrase': 'ok',
  'http2-version': 'ok',
  'early-hints-then-ok': '{"ok":true}',
  'two-interims-then-ok': '{"ok":true}',
  'bytes-after-body': 'ok',
  'http10-body-until-close': 'hello',
  'slow-drip-headers': '{"ok":true}',
  trailers: 'ok',
  'chunked-slow-cacheable': 'ok',
  'utf8-header-value': 'ok',
};

/** The hostile upstream with every case, behind a `/plain` and a `/cached` route of a gateway. */
export async function startHostileSetup(): Promise<{ upstream: HostileUpstream; gw: TestGateway }> {
  const upstream = await startHostileUpstream(new Map(CASES.map(([name, answer]) => [name, answer])));
  const gw = await startTestGateway(upstream.url, {
    routes: [
      { prefix: '/plain', upstream: upstream.url, auth: 'none' },
      { prefix: '/cached', upstream: upstream.url, auth: 'none', cache: true },
    ],
    proxy: { responseTimeoutMs: 400, bodyTimeoutMs: 400 },
  });
  return { upstream, gw };
}
