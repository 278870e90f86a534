/**
 * The request line's version is checked for what it is (issue 31): on an HTTP/1.1 connection
 * only HTTP/1.x is served. Node's parser takes `HTTP/2.0` and `HTTP/3.0` request lines, and
 * `httpVersionMajor === 2` was read as "an HTTP/2 stream" (a 500, TypeError); any version
 * but 1.x is now a 505 problem, nothing forwarded, and the gateway serves on.
 */
import { describe, expect, it } from 'vitest';
import { rawRequest, useRecordingGateway } from '../support/harness.ts';

const running = useRecordingGateway();

const line = (version: string, path = '/v1/orders') =>
  `GET ${path} ${version}\r\nHost: localhost\r\nConnection: close\r\n\r\n`;

describe('the request line version over HTTP/1.1', () => {
  it.each(['HTTP/2.0', 'HTTP/3.0'])(
    '%s: 505 problem, nothing forwarded, the gateway serves on',
    async (version) => {
      const before = running.upstream.records.length;
      const response = await rawRequest(
        running.gw.port,
        running.gw.certificate.cert,
        line(version, `/v1/v${version}`),
      );
      expect(response.status).toBe(505);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(response.body)).toMatchObject({
        status: 505,
        code: 'ERR_HTTP_VERSION_NOT_SUPPORTED',
      });
      expect(running.upstream.records.length).toBe(before);

      const after = await rawRequest(
        running.gw.port,
        running.gw.certificate.cert,
        line('HTTP/1.1', `/v1/after-${version}`),
      );
      expect(after.status).toBe(200);
    },
  );

  it.each(['HTTP/1.1', 'HTTP/1.0'])('%s is served (control)', async (version) => {
    const response = await rawRequest(
      running.gw.port,
      running.gw.certificate.cert,
      line(version, `/v1/control-${version}`),
    );
    expect(response.status).toBe(200);
  });
});
