/**
 * The gateway's hop to an https: upstream, with real sockets: mutual TLS with the configured
 * CA and client certificate; a certificate that does not verify (wrong name, expired, unknown
 * CA) is a 502 problem and a `tls` upstream error, never a retry in plain HTTP; bad settings
 * refuse the start with every problem by path.
 */
import { createServer as createHttpServer } from 'node:http';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { ConfigError, parseConfig } from '../../../gateway/config/load.ts';
import { startTestGateway, type TestGateway } from '../support/harness.ts';
import {
  createTestPki,
  startTlsUpstream,
  type TestPki,
  type TlsUpstream,
} from '../../support/internal-pki.ts';
import { TLS_OPTIONS } from '../../../shared/tls-policy.ts';

let pki: TestPki;
let stranger: TestPki;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  pki = await createTestPki('internal-ca');
  stranger = await createTestPki('stranger-ca');
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function upstream(files: { cert: string; key: string }): Promise<TlsUpstream> {
  const started = await startTlsUpstream({ ...files, ca: pki.ca.cert });
  cleanups.push(() => started.close());
  return started;
}

async function gatewayTo(url: string, tls: Record<string, string> = {}): Promise<TestGateway> {
  const gw = await startTestGateway(url, {
    proxy: {
      retries: 1,
      upstreamTls: [
        {
          origin: url,
          caFile: pki.caFile,
          certFile: pki.client.certFile,
          keyFile: pki.client.keyFile,
          ...tls,
        },
      ],
    },
  });
  cleanups.push(() => gw.close());
  return gw;
}

async function get(gw: TestGateway, path = '/v1/orders') {
  const res = await request(`${gw.origin}${path}`, { dispatcher: gw.agent });
  const text = await res.body.text();
  return { status: res.statusCode, type: String(res.headers['content-type']), body: JSON.parse(text) };
}

async function upstreamErrors(gw: TestGateway): Promise<string[]> {
  const res = await request(`${gw.adminOrigin}/metrics`);
  return (await res.body.text())
    .split('\n')
    .filter((line) => line.startsWith('portico_upstream_errors_total{'));
}

describe('the gateway to an https: upstream', () => {
  it('speaks HTTP/1.1 to an upstream that would take HTTP/2 too (the upstream side stays HTTP/1.1 keep-alive)', async () => {
    const versions: string[] = [];
    const server: Http2SecureServer = createSecureServer(
      { ...TLS_OPTIONS, ...pki.server, ca: pki.ca.cert, requestCert: true, allowHTTP1: true },
      (req, res) => {
        versions.push(req.httpVersion);
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end('{"ok":true}');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const gw = await gatewayTo(`https://127.0.0.1:${(server.address() as AddressInfo).port}`);
    expect((await get(gw)).status).toBe(200);
    expect(versions).toEqual(['1.1']);
  });

  it('relays over mutual TLS, presenting its client certificate', async () => {
    const up = await upstream(pki.server);
    const gw = await gatewayTo(up.url);
    const res = await get(gw);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect(up.peers).toEqual(['portico-gateway']);
  });

  it('a wrong server name is a 502 problem and a tls upstream error, not a retry', async () => {
    const up = await upstream(pki.server);
    const gw = await gatewayTo(up.url, { serverName: 'billing.internal' });
    const res = await get(gw);
    expect(res.status).toBe(502);
    expect(res.type).toContain('application/problem+json');
    expect(res.body).toMatchObject({ code: 'ERR_BAD_GATEWAY', status: 502 });
    expect(up.peers).toEqual([]);
    expect(await upstreamErrors(gw)).toEqual([
      `portico_upstream_errors_total{upstream="${up.url}",kind="tls"} 1`,
    ]);
  });

  it('an expired upstream certificate is a 502 problem', async () => {
    const day = 24 * 3600 * 1000;
    const expired = await pki.issue('expired-server', {
      commonName: 'portico-resource-service',
      usage: 'server',
      notBefore: new Date(Date.now() - 3 * day),
      notAfter: new Date(Date.now() - day),
    });
    const up = await upstream(expired);
    const gw = await gatewayTo(up.url);
    const res = await get(gw);
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'ERR_BAD_GATEWAY' });
    expect(up.peers).toEqual([]);
    expect(await upstreamErrors(gw)).toEqual([
      `portico_upstream_errors_total{upstream="${up.url}",kind="tls"} 1`,
    ]);
  });

  it('a certificate from a CA it does not trust is a 502, with or without upstreamTls for the origin', async () => {
    const up = await upstream(stranger.server);
    const gw = await gatewayTo(up.url);
    expect((await get(gw)).status).toBe(502);
    // No settings for the origin: the system CAs, which do not know a private CA either.
    const bare = await startTestGateway(up.url, { proxy: { upstreamTls: [] } });
    cleanups.push(() => bare.close());
    expect((await get(bare)).body).toMatchObject({ code: 'ERR_BAD_GATEWAY', status: 502 });
    expect(up.peers).toEqual([]);
  });

  it('a client certificate the upstream refuses is a 502 problem, the request never arriving', async () => {
    const up = await upstream(pki.server);
    const gw = await gatewayTo(up.url, {
      certFile: stranger.client.certFile,
      keyFile: stranger.client.keyFile,
    });
    const res = await get(gw);
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'ERR_BAD_GATEWAY', status: 502 });
    expect(up.peers).toEqual([]);
    // TLS 1.3 tells the client of the refusal only by closing: undici reports "other side
    // closed", which cannot be told from a reset, so the metric says `reset` here.
    expect(await upstreamErrors(gw)).toEqual([
      `portico_upstream_errors_total{upstream="${up.url}",kind="reset"} 1`,
    ]);
  });

  it('an https: upstream that answers in plain HTTP gets no request: 502, kind tls, no fallback', async () => {
    let received = 0;
    const plain = createHttpServer((_req, res) => {
      received += 1;
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => plain.close(resolve)));
    const url = `https://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    const gw = await gatewayTo(url);
    const res = await get(gw);
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'ERR_BAD_GATEWAY', status: 502 });
    expect(received).toBe(0);
    expect(await upstreamErrors(gw)).toEqual([
      `portico_upstream_errors_total{upstream="${url}",kind="tls"} 1`,
    ]);
  });

  it('refuses settings that cannot work, every problem by path', async () => {
    const problems = (upstreamTls: unknown[]) => {
      try {
        parseConfig({ routes: [{ prefix: '/v1', upstream: 'https://svc:8443' }], proxy: { upstreamTls } });
      } catch (error) {
        if (error instanceof ConfigError) return error.problems;
        throw error;
      }
      return [];
    };
    expect(
      problems([
        { origin: 'http://svc:8081', caFile: 'ca.crt' },
        { origin: 'https://svc:8443', certFile: 'client.crt' },
        { origin: 'https://svc:8443/path', keyFile: 'client.key' },
      ]),
    ).toEqual([
      'proxy.upstreamTls[0].origin: must be an https: origin',
      'proxy.upstreamTls[1].keyFile: is required with certFile',
      'proxy.upstreamTls[2].origin: must be an origin only (scheme, host, port)',
      'proxy.upstreamTls[2].origin: https://svc:8443 has settings already',
      'proxy.upstreamTls[2].certFile: is required with keyFile',
    ]);
    // The default port and upper case are the same origin as a route would name it.
    expect(problems([{ origin: 'https://SVC:443' }])).toEqual([]);
    expect(problems([{ origin: 'https://svc:8443', serverName: 'not a name', verify: false }])).toEqual([
      'proxy.upstreamTls[0].verify: unknown key',
      expect.stringMatching(/^proxy\.upstreamTls\[0\]\.serverName: /),
    ]);
    // A file that cannot be read refuses the start, naming the setting.
    await expect(
      startTestGateway('https://127.0.0.1:9', {
        proxy: { upstreamTls: [{ origin: 'https://127.0.0.1:9', caFile: '/nonexistent/ca.crt' }] },
      }),
    ).rejects.toThrow(/proxy\.upstreamTls\[0\]\.caFile: cannot read/);
  });
});
