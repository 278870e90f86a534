/**
 * What a WebSocket leaves in /metrics and in the audit log, through a real gateway: the open
 * connections gauge, opened and closed (by close code) counters, the message bytes each way;
 * the handshake's record marked `open` (status 101, or 200 on HTTP/2) and a `close` record
 * with the same request id, its code, who closed, the bytes each way and its duration.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
let dir: string;
let auditLogPath: string;

beforeAll(async () => {
  upstream = await startEchoUpstream({ hello: 'hi!' });
  dir = mkdtempSync(join(tmpdir(), 'portico-ws-audit-'));
  auditLogPath = join(dir, 'audit.log');
  gw = await startTestGateway(
    upstream.url,
    { routes: [{ prefix: '/v1/chat', name: 'chat', upstream: upstream.url, auth: 'none', websocket: {} }] },
    { auditLogPath },
  );
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function metric(name: string): Promise<number> {
  const res = await request(`${gw.adminOrigin}/metrics`);
  const line = (await res.body.text()).split('\n').find((text) => text.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

/** Every audit record of `requestId`, once there are `count` of them. */
async function records(requestId: string, count: number): Promise<Record<string, unknown>[]> {
  for (let i = 0; i < 100; i++) {
    const found = readFileSync(auditLogPath, 'utf8')
      .split('\n')
      .filter((line) => line.endsWith('}'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => record['requestId'] === requestId);
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`fewer than ${count} records for ${requestId}`);
}

describe('a WebSocket in /metrics and the audit log', () => {
  it('counts it open, its bytes each way, and its close by code; audits open and close with bytes', async () => {
    const opened = await openH1(gw, '/v1/chat/a');
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    const { ws, headers } = opened;
    expect(await nextMessage(ws)).toBe('hi!');
    expect(await metric('portico_websocket_connections{route="chat"}')).toBe(1);
    // 5 + 7 bytes in; 3 (hello) + 5 + 7 echoed out.
    ws.send('hello');
    expect(await nextMessage(ws)).toBe('hello');
    ws.send(Buffer.alloc(7));
    await nextMessage(ws);
    const ending = closed(ws);
    ws.close(4001, 'bye');
    await ending;

    const [open, close] = await records(String(headers['x-request-id']), 2);
    expect(open).toMatchObject({
      status: 101,
      route: 'chat',
      path: '/v1/chat/a',
      websocket: { event: 'open' },
    });
    expect(close).toMatchObject({
      status: 101,
      route: 'chat',
      path: '/v1/chat/a',
      websocket: {
        event: 'close',
        code: 4001,
        reason: 'bye',
        closedBy: 'client',
        bytesIn: 12,
        bytesOut: 15,
        messagesIn: 2,
        messagesOut: 3,
      },
    });
    expect((close?.['websocket'] as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(0);

    expect(await metric('portico_websocket_connections{route="chat"}')).toBe(0);
    expect(await metric('portico_websocket_opened_total{route="chat"}')).toBe(1);
    expect(await metric('portico_websocket_closed_total{route="chat",code="4001"}')).toBe(1);
    expect(await metric('portico_websocket_message_bytes_total{route="chat",direction="in"}')).toBe(12);
    expect(await metric('portico_websocket_message_bytes_total{route="chat",direction="out"}')).toBe(15);
    expect(await metric('portico_websocket_messages_total{route="chat",direction="out"}')).toBe(3);
  });

  it('audits an HTTP/2 WebSocket the same way, its open record with the 200 it was answered', async () => {
    const opened = await openH2(gw, '/v1/chat/b');
    if (isRefused(opened)) throw new Error(`refused: ${opened.status} ${opened.body}`);
    expect(await nextMessage(opened.ws)).toBe('hi!');
    const ending = closed(opened.ws);
    opened.ws.close(1000);
    await ending;
    opened.session.close();
    const [open, close] = await records(String(opened.headers['x-request-id']), 2);
    expect(open).toMatchObject({ status: 200, method: 'GET', websocket: { event: 'open' } });
    expect(close).toMatchObject({ websocket: { event: 'close', code: 1000, bytesIn: 0, bytesOut: 3 } });
  });
});
