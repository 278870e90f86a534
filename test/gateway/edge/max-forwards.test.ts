/**
 * Max-Forwards and TRACE (RFC 9110 §7.6.2, §9.3.8, issue 35). OPTIONS with `Max-Forwards: 0` is
 * the gateway's to answer (200, Allow), a larger value goes on decremented; other methods
 * ignore the field. TRACE is refused (405) whatever Max-Forwards says: an upstream echoing it
 * would hand the client the request as the gateway sent it, its signed identity assertion
 * included (cross-site tracing).
 */
import { describe, expect, it } from 'vitest';
import { rawRequest, useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway();

const send = (method: string, path: string, maxForwards?: string) =>
  rawRequest(
    running.gw.port,
    running.gw.certificate.cert,
    `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n` +
      (maxForwards === undefined ? '' : `Max-Forwards: ${maxForwards}\r\n`) +
      'Connection: close\r\n\r\n',
  );

describe('OPTIONS', () => {
  it('Max-Forwards: 0 is answered by the gateway: 200 with Allow, nothing forwarded', async () => {
    const before = running.upstream.records.length;
    const response = await send('OPTIONS', '/v1/orders', '0');
    expect(response.status).toBe(200);
    expect(response.headers.allow).toBe('GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE');
    expect(response.headers['content-length']).toBe('0');
    expect(response.headers['x-request-id']).toBeDefined();
    expect(running.upstream.records.length).toBe(before);
  });

  it('Max-Forwards: 3 goes on as 2', async () => {
    const response = await send('OPTIONS', '/v1/orders', '3');
    expect(response.status).toBe(200);
    expect(running.upstream.records.at(-1)!.headers['max-forwards']).toBe('2');
  });

  it('a Max-Forwards that is no number: 400 problem', async () => {
    const response = await send('OPTIONS', '/v1/orders', 'many');
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'ERR_INVALID_HEADER' });
  });
});

describe('TRACE', () => {
  it.each([undefined, '0', '5'])(
    'Max-Forwards %s: 405 problem with Allow, nothing forwarded',
    async (value) => {
      const before = running.upstream.records.length;
      const response = await send('TRACE', '/v1/orders', value);
      expect(response.status).toBe(405);
      expect(response.headers.allow).toBe('GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE');
      expect(JSON.parse(response.body)).toMatchObject({ code: 'ERR_METHOD_NOT_ALLOWED' });
      expect(running.upstream.records.length).toBe(before);
    },
  );
});

describe('other methods', () => {
  it('GET with Max-Forwards: 0 is forwarded, the field unchanged', async () => {
    const response = await send('GET', '/v1/orders', '0');
    expect(response.status).toBe(200);
    expect(running.upstream.records.at(-1)!.headers['max-forwards']).toBe('0');
  });
});
