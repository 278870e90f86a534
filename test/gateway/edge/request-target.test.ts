/**
 * The request target and Host (RFC 9112 §3.2, issue 35). An absolute-form target
 * (`GET https://host/v1/...`) MUST be accepted, its authority taking the place of Host; it was a
 * 400. A Host that is not `uri-host [":" port]` (`a b`) MUST be a 400; it was served.
 */
import { describe, expect, it } from 'vitest';
import { closeSession, h2Request, h2Session } from '../support/h2-client.ts';
import { rawRequest, useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway();

const send = (target: string, host: string) =>
  rawRequest(
    running.gw.port,
    running.gw.certificate.cert,
    `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  );

describe('absolute-form request target', () => {
  it.each(['https', 'HTTPS', 'http'])('%s://: served, the host taken from the target', async (scheme) => {
    const before = running.upstream.records.length;
    const response = await send(`${scheme}://api.example.test/v1/absolute-${scheme}?page=2`, 'other.example');
    expect(response.status).toBe(200);
    expect(running.upstream.records.length).toBe(before + 1);
    const record = running.upstream.records.at(-1)!;
    expect(record.url).toBe(`/v1/absolute-${scheme}?page=2`);
    expect(record.headers['x-forwarded-host']).toBe('api.example.test');
    expect(record.headers.forwarded).toContain('host="api.example.test"');
  });

  it('with a port, and no path beyond the authority: the path is /', async () => {
    const response = await send('https://api.example.test:8443/v1/with-port', 'api.example.test');
    expect(response.status).toBe(200);
    expect(running.upstream.records.at(-1)!.headers['x-forwarded-host']).toBe('api.example.test:8443');
    // `/` is no route of this gateway: a 404, not a 400 about the target's form.
    const bare = await send('https://api.example.test', 'api.example.test');
    expect(bare.status).toBe(404);
  });

  it.each([
    ['credentials in the authority', 'https://user:secret@api.example.test/v1/x'],
    ['an invalid authority', 'https://api.example.test:port/v1/x'],
    ['another scheme', 'ftp://api.example.test/v1/x'],
    ['a dot segment', 'https://api.example.test/v1/../admin'],
  ])('%s: 400 problem, nothing forwarded', async (_name, target) => {
    const before = running.upstream.records.length;
    const response = await send(target, 'api.example.test');
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(running.upstream.records.length).toBe(before);
  });
});

describe('Host value', () => {
  it.each(['a b', 'a/b', 'a@b', '[::1', 'host:port'])('%j: 400 problem, nothing forwarded', async (host) => {
    const before = running.upstream.records.length;
    const response = await send('/v1/bad-host', host);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'ERR_INVALID_HEADER' });
    expect(running.upstream.records.length).toBe(before);
  });

  it.each(['localhost', 'api.example.test:8443', '127.0.0.1', '[::1]:443', 'xn--bcher-kva.example'])(
    '%j is served (control)',
    async (host) => {
      const response = await send('/v1/good-host', host);
      expect(response.status).toBe(200);
    },
  );

  it('over HTTP/2, an :authority that is no valid host: 400 problem, nothing forwarded', async () => {
    const before = running.upstream.records.length;
    const session = await h2Session(running.gw.port, running.gw.certificate.cert);
    try {
      const response = await h2Request(session, {
        ':method': 'GET',
        ':path': '/v1/bad-authority',
        ':authority': 'api.example.test:port',
      });
      expect(response.status).toBe(400);
      expect(JSON.parse(response.body)).toMatchObject({ code: 'ERR_INVALID_HEADER' });
      expect(running.upstream.records.length).toBe(before);
    } finally {
      await closeSession(session);
    }
  });
});
