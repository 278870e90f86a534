/**
 * A route's WebSocket bounds, over real sockets on both client protocols: a message over
 * `maxMessageBytes` closes with 1009, more than `maxMessagesPerSecond` with 1008 (RFC 6455
 * §7.4.1), a connection without traffic for `idleTimeoutMs` and one older than
 * `maxLifetimeMs` with 1001; the upstream is told the same code. A connection that keeps
 * talking outlives the listener's request timeouts, which bound requests, not tunnels.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../support/harness.ts';
import {
  closed,
  isRefused,
  nextMessage,
  openH1,
  openH2,
  startEchoUpstream,
  type EchoUpstream,
} from './support.ts';

let upstream: EchoUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  gw = await startTestGateway(upstream.url, {
    routes: [
      {
        prefix: '/v1/tight',
        upstream: upstream.url,
        auth: 'none',
        websocket: { maxMessageBytes: 1024, maxMessagesPerSecond: 5, idleTimeoutMs: 400 },
      },
      {
        prefix: '/v1/short',
        upstream: upstream.url,
        auth: 'none',
        websocket: { maxLifetimeMs: 600, idleTimeoutMs: 60_000, maxMessagesPerSecond: 1000 },
      },
    ],
    listener: { limits: { requestTimeoutMs: 300, headersTimeoutMs: 300, keepAliveTimeoutMs: 300 } },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const protocols = {
  'HTTP/1.1': async (path: string) => {
    const opened = await openH1(gw, path);
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    return { ws: opened.ws, done: () => {} };
  },
  'HTTP/2': async (path: string) => {
    const opened = await openH2(gw, path);
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    return { ws: opened.ws, done: () => opened.session.close() };
  },
};

/** Sends a short message every `everyMs` until `ws` closes. */
function keepTalking(ws: WebSocket, everyMs: number): void {
  const timer = setInterval(() => ws.send('.'), everyMs);
  ws.once('close', () => clearInterval(timer));
}

describe.each(Object.entries(protocols))('over %s', (_name, open) => {
  it('closes with 1009 on a message over maxMessageBytes, and tells the upstream', async () => {
    const { ws, done } = await open('/v1/tight/size');
    ws.send('x'.repeat(1024));
    expect((await nextMessage(ws)).length).toBe(1024);
    const ending = closed(ws);
    const upstreamClosesBefore = upstream.closes.length;
    ws.send('x'.repeat(1025));
    expect((await ending).code).toBe(1009);
    await until(() => upstream.closes.length > upstreamClosesBefore);
    expect(upstream.closes.at(-1)!.code).toBe(1009);
    done();
  });

  it('closes with 1008 when the client sends more than maxMessagesPerSecond', async () => {
    const { ws, done } = await open('/v1/tight/rate');
    const ending = closed(ws);
    for (let i = 0; i < 12; i++) ws.send(`m${i}`);
    const { code, reason } = await ending;
    expect(code).toBe(1008);
    expect(reason).toMatch(/messages per second/);
    done();
  });

  it('closes an idle connection with 1001, while one that keeps talking outlives the request timeouts', async () => {
    const { ws, done } = await open('/v1/tight/idle');
    const ending = closed(ws);
    // Past requestTimeoutMs (300) and idleTimeoutMs (400) of wall time, but never 400 ms silent
    // (and under the route's 5 messages a second).
    const talking = setInterval(() => ws.send('.'), 250);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    clearInterval(talking);
    expect(ws.readyState).toBe(ws.OPEN);
    const { code, reason } = await ending;
    expect(code).toBe(1001);
    expect(reason).toMatch(/idle/);
    done();
  });

  it('closes a connection older than maxLifetimeMs with 1001, however busy', async () => {
    const { ws, done } = await open('/v1/short/life');
    const ending = closed(ws);
    keepTalking(ws, 50);
    const { code, reason } = await ending;
    expect(code).toBe(1001);
    expect(reason).toMatch(/lifetime/);
    done();
  });
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(check()).toBe(true);
}
