/**
 * The admin listener answers its errors as the rest of the product does: RFC 9457
 * application/problem+json with a stable code, `Allow` on 405, never cached, never HTML.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway(upstream.url);
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function problemOf(method: string, path: string) {
  const response = await request(`${gw.adminOrigin}${path}`, { method: method as 'GET' });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    type: response.headers['content-type'],
    allow: response.headers['allow'],
    cacheControl: response.headers['cache-control'],
    body: text === '' ? undefined : JSON.parse(text),
  };
}

describe('admin listener errors', () => {
  it.each(['/nope', '/metrics/x', '/dashboard.json/', '/../etc/passwd', '/index.html'])(
    'GET %s is a 404 problem',
    async (path) => {
      const answer = await problemOf('GET', path);
      expect(answer).toMatchObject({
        status: 404,
        type: 'application/problem+json',
        cacheControl: 'no-store',
        body: { status: 404, code: 'ERR_ROUTE_NOT_FOUND', type: 'urn:portico:problem:route-not-found' },
      });
    },
  );

  it.each([
    ['DELETE', '/metrics'],
    ['POST', '/healthz'],
    ['PUT', '/'],
    ['POST', '/dashboard.json'],
  ])('%s %s is a 405 problem naming the methods allowed', async (method, path) => {
    const answer = await problemOf(method, path);
    expect(answer).toMatchObject({
      status: 405,
      type: 'application/problem+json',
      allow: 'GET, HEAD',
      body: { status: 405, code: 'ERR_METHOD_NOT_ALLOWED', instance: path },
    });
  });

  it('answers the purge with the wrong method as a problem too', async () => {
    const answer = await problemOf('GET', '/cache/purge?prefix=/v1');
    expect(answer).toMatchObject({ status: 405, type: 'application/problem+json', allow: 'POST' });
  });

  it('keeps the successful answers as they were', async () => {
    expect(await problemOf('GET', '/healthz')).toMatchObject({ status: 200, type: 'application/json' });
    const head = await request(`${gw.adminOrigin}/nope`, { method: 'HEAD' });
    await head.body.text();
    expect(head.statusCode).toBe(404);
    expect(head.headers['content-type']).toBe('application/problem+json');
  });
});
