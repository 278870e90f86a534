/**
 * Operating the gateway: admin endpoints, TLS settings, certificate reload, graceful
 * shutdown, the redirect listener and logs. The signal tests run `gateway/main.ts` as a
 * child process and send it real SIGHUP and SIGTERM.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { Agent, Client, request } from 'undici';
import { createTestCertificate } from '../../support/tls.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { rawRequest, sleep, startRecordingUpstream, startTestGateway } from '../support/harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function upstreamAndGateway(
  config: Record<string, unknown> = {},
  handler?: Parameters<typeof startRecordingUpstream>[0],
) {
  const upstream = await startRecordingUpstream(handler);
  cleanups.push(() => upstream.close());
  const gw = await startTestGateway(upstream.url, config);
  cleanups.push(() => gw.close());
  return { upstream, gw };
}

/** The gateway's `portico_open_connections`: connections its HTTPS listener has accepted. */
async function openConnections(adminOrigin: string): Promise<number> {
  const text = await (await request(`${adminOrigin}/metrics`)).body.text();
  return Number(/^portico_open_connections (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** The certificate a fresh TLS connection is served, as its SHA-256 fingerprint. */
function servedFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      ca,
      servername: 'localhost',
      rejectUnauthorized: false,
    });
    socket.once('secureConnect', () => {
      resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '');
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

describe('admin listener', () => {
  it('serves /healthz, /readyz and /metrics on 127.0.0.1', async () => {
    const { gw } = await upstreamAndGateway();
    expect(gw.gateway.addresses.admin.address).toBe('127.0.0.1');
    await (await request(`${gw.origin}/v1/x`, { dispatcher: gw.agent })).body.text();
    await (await request(`${gw.origin}/nope`, { dispatcher: gw.agent })).body.text();

    const health = await request(`${gw.adminOrigin}/healthz`);
    expect(health.statusCode).toBe(200);
    expect(health.headers['x-content-type-options']).toBe('nosniff');
    expect(await health.body.json()).toEqual({ status: 'ok' });

    const ready = await request(`${gw.adminOrigin}/readyz`);
    expect(ready.statusCode).toBe(200);
    expect(await ready.body.json()).toMatchObject({ status: 'ready', checks: [{ ok: true }] });

    const metrics = await request(`${gw.adminOrigin}/metrics`);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    const text = await metrics.body.text();
    expect(text).toContain('portico_http_requests_total{route="/v1",method="GET",status="200"} 1');
    expect(text).toContain('portico_http_requests_total{route="none",method="GET",status="404"} 1');
    expect(text).toMatch(/portico_http_request_duration_seconds_count\{route="\/v1"\} 1/);
    expect(text).toMatch(/portico_open_connections [1-9]/);
    expect(text).toContain('# TYPE portico_upstream_errors_total counter');
  });

  // Issue 29: an upstream the whole fleet shares being down must not take every gateway out of
  // rotation at once (admin/readiness.ts); the gateway stays ready and reports it degraded.
  it('reports degraded, still ready, with the failing check, when an upstream is down', async () => {
    const down = await startRecordingUpstream();
    await down.close();
    const gw = await startTestGateway(down.url);
    cleanups.push(() => gw.close());
    const ready = await request(`${gw.adminOrigin}/readyz`);
    expect(ready.statusCode).toBe(200);
    expect(await ready.body.json()).toMatchObject({
      status: 'degraded',
      checks: [{ name: `upstream ${down.url}`, ok: false, required: false, detail: 'ECONNREFUSED' }],
    });
  });

  it('includes the readiness checks later stages register', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    const gw = await startTestGateway(
      upstream.url,
      {},
      {
        readinessChecks: [{ name: 'redis', check: () => Promise.resolve({ ok: false, detail: 'down' }) }],
      },
    );
    cleanups.push(() => gw.close());
    const ready = await request(`${gw.adminOrigin}/readyz`);
    expect(ready.statusCode).toBe(503);
    expect(await ready.body.json()).toMatchObject({ checks: [{ ok: true }, { name: 'redis', ok: false }] });
  });
});

describe('TLS and HSTS', () => {
  it('refuses TLS 1.1 and serves TLS 1.2+ with the ECDSA certificate and HSTS on every answer', async () => {
    const { gw } = await upstreamAndGateway();
    const old = await new Promise<string>((resolve) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: gw.port,
        ca: gw.certificate.cert,
        servername: 'localhost',
        minVersion: 'TLSv1',
        maxVersion: 'TLSv1.1',
      });
      socket.once('secureConnect', () => resolve('connected'));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(old).not.toBe('connected');

    const protocol = await new Promise<string | null>((resolve, reject) => {
      const socket: TLSSocket = tlsConnect({
        host: '127.0.0.1',
        port: gw.port,
        ca: gw.certificate.cert,
        servername: 'localhost',
      });
      socket.once('secureConnect', () => {
        resolve(socket.getProtocol());
        socket.destroy();
      });
      socket.once('error', reject);
    });
    expect(['TLSv1.2', 'TLSv1.3']).toContain(protocol);

    const ok = await rawRequest(
      gw.port,
      gw.certificate.cert,
      'GET /v1/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
    );
    const refused = await rawRequest(
      gw.port,
      gw.certificate.cert,
      'GET /v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
    );
    const parserRefused = await rawRequest(
      gw.port,
      gw.certificate.cert,
      'GET /v1/x HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n',
    );
    for (const response of [ok, refused, parserRefused]) {
      expect(response.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
      expect(response.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('serves a replaced certificate after reloadCertificates, keeps open connections, and keeps the old one on a bad pair', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    const own = await createTestCertificate('first');
    const second = await createTestCertificate('second');
    const gw = await startTestGateway(upstream.url, {}, {}, own);
    cleanups.push(() => gw.close());
    const before = await servedFingerprint(gw.port, own.cert);

    const client = new Client(gw.origin, { connect: { ca: own.cert, servername: 'localhost' } });
    cleanups.push(() => client.close());
    const early = await client.request({ path: '/v1/a', method: 'GET' });
    expect(early.statusCode).toBe(200);
    await early.body.text();

    copyFileSync(second.certFile, own.certFile);
    copyFileSync(second.keyFile, own.keyFile);
    const reloaded = gw.gateway.reloadCertificates();
    expect(reloaded.subject).toBe('CN=second');
    const after = await servedFingerprint(gw.port, second.cert);
    expect(after).not.toBe(before);
    expect(after).toBe(reloaded.fingerprint256);

    // The connection opened before the reload still carries requests.
    const again = await client.request({ path: '/v1/b', method: 'GET' });
    expect(again.statusCode).toBe(200);
    await again.body.text();

    // A key that does not match its certificate is refused; the served one stays.
    const third = await createTestCertificate('third');
    copyFileSync(third.keyFile, own.keyFile);
    expect(() => gw.gateway.reloadCertificates()).toThrow();
    expect(await servedFingerprint(gw.port, second.cert)).toBe(after);
  });
});

describe('redirect listener', () => {
  it('is off by default', async () => {
    const { gw } = await upstreamAndGateway();
    expect(gw.gateway.addresses.redirect).toBeUndefined();
  });

  it('when enabled, answers plain HTTP only with a 308 to HTTPS', async () => {
    const { upstream, gw } = await upstreamAndGateway({
      listener: { httpRedirect: { enabled: true, port: 0 } },
    });
    const port = gw.gateway.addresses.redirect?.port;
    type Answer = { status?: number | undefined; location?: string | undefined; nosniff?: unknown };
    const response = await new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/v1/orders?limit=2',
          method: 'POST',
          headers: { host: 'api.example.com:80' },
        },
        (res) => {
          res.resume();
          const nosniff = res.headers['x-content-type-options'];
          resolve({ status: res.statusCode, location: res.headers.location, nosniff });
        },
      );
      req.once('error', reject);
      req.end('{}');
    });
    expect(response).toEqual({
      status: 308,
      location: `https://api.example.com:${gw.port}/v1/orders?limit=2`,
      nosniff: 'nosniff',
    });
    expect(upstream.records).toEqual([]);
  });
});

describe('graceful shutdown (in process)', () => {
  it('answers in-flight HTTP/1.1 requests with Connection: close, refuses new connections, and cuts what outlives the deadline', async () => {
    // The quick answer waits for the drain to begin: a timer could run out first on a busy machine.
    let answerQuick: (() => void) | undefined;
    const { gw, upstream } = await upstreamAndGateway(
      { listener: { shutdownTimeoutMs: 500 } },
      (req, res) => {
        if (req.url === '/v1/quick') answerQuick = () => res.end('done');
      },
    );
    // HTTP/1.1 on purpose (undici offers h2 by default): `Connection: close` is its drain
    // signal; HTTP/2's is GOAWAY (test/gateway/edge/http2-limits.test.ts).
    const http1 = new Agent({
      allowH2: false,
      connect: { ca: gw.certificate.cert, servername: 'localhost' },
    });
    cleanups.push(() => http1.close());
    const quick = request(`${gw.origin}/v1/quick`, { dispatcher: http1 });
    const hung = request(`${gw.origin}/v1/hang`, { dispatcher: http1 }).then(
      () => 'answered',
      () => 'cut',
    );
    // Both requests in flight at the gateway before the drain, however long that takes.
    while (upstream.records.length < 2) await sleep(10);
    const started = Date.now();
    const closed = gw.gateway.close();
    const ready = await request(`${gw.adminOrigin}/readyz`);
    expect(ready.statusCode).toBe(503);
    await ready.body.text();
    answerQuick?.();

    const quickResponse = await quick;
    expect(quickResponse.statusCode).toBe(200);
    expect(quickResponse.headers['connection']).toBe('close');
    expect(await quickResponse.body.text()).toBe('done');
    // A fresh agent: the shared one may still hold a connection accepted before the drain.
    const fresh = new Agent({ connect: { ca: gw.certificate.cert } });
    cleanups.push(() => fresh.close());
    await expect(request(`${gw.origin}/v1/late`, { dispatcher: fresh })).rejects.toThrow();

    await closed;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await hung).toBe('cut');
  });

  // A connection the listener accepted before the drain but whose handshake ends after it
  // (a slow or hostile client) is not yet an HTTP connection, so closing "all connections"
  // missed it: a request it sent then held the shutdown until the client let go.
  it('cuts at the deadline a connection that was still in its TLS handshake when the drain began', async () => {
    const { gw } = await upstreamAndGateway({ listener: { shutdownTimeoutMs: 500 } }, () => {});
    const raw = netConnect(gw.port, '127.0.0.1');
    cleanups.push(() => Promise.resolve(void raw.destroy()));
    await new Promise<void>((resolve, reject) => raw.once('connect', resolve).once('error', reject));
    // Accepted by the gateway, not merely queued in the kernel's backlog.
    while ((await openConnections(gw.adminOrigin)) < 1) await sleep(10);

    const started = Date.now();
    const closed = gw.gateway.close();
    const tls = tlsConnect({
      socket: raw,
      ca: gw.certificate.cert,
      servername: 'localhost',
      ALPNProtocols: ['http/1.1'],
    });
    const socketClosed = new Promise<void>((resolve) => tls.once('close', () => resolve()));
    tls.on('error', () => {});
    tls.once('secureConnect', () => tls.write('GET /v1/hang HTTP/1.1\r\nHost: localhost\r\n\r\n'));

    const outcome = await Promise.race([
      closed.then(() => 'stopped'),
      sleep(5000).then(() => 'still draining'),
    ]);
    expect(outcome).toBe('stopped');
    expect(Date.now() - started).toBeLessThan(3000);
    await socketClosed;
  });
});

describe('logs', () => {
  it('writes one JSON line per request, without credentials or the query string', async () => {
    const { gw } = await upstreamAndGateway();
    const response = await request(`${gw.origin}/v1/orders?api_key=querysecret`, {
      dispatcher: gw.agent,
      headers: { authorization: 'Bearer headersecret', cookie: 'session=cookiesecret' },
    });
    await response.body.text();
    const id = response.headers['x-request-id'];
    const lines = gw.logs.filter((line) => line['msg'] === 'request' && line['requestId'] === id);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ method: 'GET', path: '/v1/orders', status: 200, route: '/v1' });
    expect(gw.logText()).not.toMatch(/querysecret|headersecret|cookiesecret/);
  });
});

describe('signals (gateway/main.ts as a child process)', () => {
  const processes: GatewayProcess[] = [];
  afterEach(async () => {
    for (const gateway of processes.splice(0)) await gateway.stop();
  });

  it('SIGTERM with 50 in-flight HTTP/1.1 requests: all complete with Connection: close, then the process exits 0', async () => {
    const upstream = await startRecordingUpstream((req, res) => {
      req.resume();
      setTimeout(() => res.end(`done ${req.url}`), 700);
    });
    cleanups.push(() => upstream.close());
    const certificate = await createTestCertificate();
    const gateway = await startGatewayProcess({
      listener: { tls: { certFile: certificate.certFile, keyFile: certificate.keyFile } },
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none' }],
    });
    processes.push(gateway);
    const agent = new Agent({
      connections: 50,
      allowH2: false,
      connect: { ca: certificate.cert, servername: 'localhost' },
    });
    cleanups.push(() => agent.close());

    const inFlight = Array.from({ length: 50 }, (_, i) =>
      request(`https://localhost:${gateway.port}/v1/r${i}`, { dispatcher: agent }).then(async (response) => ({
        status: response.statusCode,
        connection: response.headers['connection'],
        body: await response.body.text(),
      })),
    );
    for (let i = 0; i < 200 && upstream.records.length < 50; i++) await sleep(10);
    expect(upstream.records).toHaveLength(50);

    gateway.child.kill('SIGTERM');
    const results = await Promise.all(inFlight);
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(results.every((r, i) => r.body === `done /v1/r${i}`)).toBe(true);
    expect(results.every((r) => r.connection === 'close')).toBe(true);
    expect(await gateway.exited).toBe(0);
    expect(gateway.logs.some((line) => line['msg'] === 'gateway stopped')).toBe(true);
  });

  it('refuses to start on an invalid config, naming every bad key, and exits 1', async () => {
    await expect(
      startGatewayProcess({ routes: [{ prefix: 'v1', upstream: 'nope' }], listenr: {} }),
    ).rejects.toThrow(/exited before "gateway listening"/);
    const dir = mkdtempSync(join(tmpdir(), 'portico-bad-'));
    writeFileSync(
      `${dir}/bad.json`,
      JSON.stringify({ routes: [{ prefix: 'v1', upstream: 'nope' }], listenr: {} }),
    );
    const result = spawnSync(
      process.execPath,
      [new URL('../../../gateway/main.ts', import.meta.url).pathname],
      {
        env: {
          PATH: process.env['PATH'],
          PORTICO_CONFIG: `${dir}/bad.json`,
          GATEWAY_PORT: '0',
          ADMIN_PORT: '0',
        },
        encoding: 'utf8',
        timeout: 10_000,
      },
    );
    rmSync(dir, { recursive: true, force: true });
    expect(result.status).toBe(1);
    const fatal = JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}') as { problems?: string[] };
    expect(fatal.problems).toEqual(
      expect.arrayContaining(['listenr: unknown key', 'routes[0].upstream: must be a URL']),
    );
    // For a person: the file, then one problem per line.
    expect(result.stderr).toContain(`invalid gateway config ${dir}/bad.json:\n`);
    expect(result.stderr).toContain('\n  listenr: unknown key');
    expect(result.stderr).toContain('\n  routes[0].upstream: must be a URL');
  });

  it('with no certificate configured, creates and serves a self-signed localhost ECDSA certificate from the data dir', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    const gateway = await startGatewayProcess({
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none' }],
    });
    processes.push(gateway);
    const served = await new Promise<{ subject: string; keyType?: string | undefined }>((resolve, reject) => {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: gateway.port,
        servername: 'localhost',
        rejectUnauthorized: false,
      });
      socket.once('secureConnect', () => {
        const x509 = socket.getPeerX509Certificate();
        resolve({ subject: x509?.subject ?? '', keyType: x509?.publicKey.asymmetricKeyType });
        socket.destroy();
      });
      socket.once('error', reject);
    });
    expect(served).toEqual({ subject: 'CN=localhost', keyType: 'ec' });
  });

  it('SIGHUP with a replaced certificate: new connections get the new one, open ones stay', async () => {
    const upstream = await startRecordingUpstream();
    cleanups.push(() => upstream.close());
    const first = await createTestCertificate('first');
    const second = await createTestCertificate('second');
    const gateway = await startGatewayProcess({
      listener: { tls: { certFile: first.certFile, keyFile: first.keyFile } },
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'none' }],
    });
    processes.push(gateway);
    const before = await servedFingerprint(gateway.port, first.cert);

    const client = new Client(`https://localhost:${gateway.port}`, {
      connect: { ca: first.cert, servername: 'localhost' },
    });
    cleanups.push(() => client.close());
    const early = await client.request({ path: '/v1/a', method: 'GET' });
    await early.body.text();

    copyFileSync(second.certFile, first.certFile);
    copyFileSync(second.keyFile, first.keyFile);
    gateway.child.kill('SIGHUP');
    const reloaded = await gateway.waitForLog('certificate reloaded');
    const after = await servedFingerprint(gateway.port, second.cert);
    expect(after).not.toBe(before);
    expect((reloaded['certificate'] as { fingerprint256: string }).fingerprint256).toBe(after);

    const late = await client.request({ path: '/v1/b', method: 'GET' });
    expect(late.statusCode).toBe(200);
    await late.body.text();
    expect(gateway.child.exitCode).toBeNull();
  });
});
