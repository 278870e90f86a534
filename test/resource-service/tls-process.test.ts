/**
 * `npm run service` (resource-service/main.ts) as a process: the SERVICE_TLS_* variables make it
 * a mutual-TLS server, SIGHUP swaps its certificate without a restart, and contradicting or
 * incomplete TLS variables refuse the start naming them.
 */
import { copyFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { pino } from 'pino';
import { readServiceConfig, ServiceConfigError } from '../../resource-service/config.ts';
import { runService } from '../../resource-service/run.ts';
import { createTestPki, type TestPki } from '../support/internal-pki.ts';
import { spawnService, type ServiceChild } from './service-process.ts';

let pki: TestPki;
let child: ServiceChild | undefined;
beforeAll(async () => {
  pki = await createTestPki('process-ca');
});
afterAll(async () => {
  await child?.kill('SIGKILL');
});

/** The fingerprint of the certificate the service serves, after a mutual-TLS handshake. */
function servedCertificate(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(
      { host: '127.0.0.1', port, ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key },
      () => {
        resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? 'none');
        socket.destroy();
      },
    );
    socket.on('error', () => resolve('refused'));
  });
}

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

describe('npm run service with SERVICE_TLS_*', () => {
  it('serves mutual TLS from the named files and reloads them on SIGHUP', async () => {
    const certFile = `${pki.dir}/served.crt`;
    const keyFile = `${pki.dir}/served.key`;
    copyFileSync(pki.server.certFile, certFile);
    copyFileSync(pki.server.keyFile, keyFile);
    child = await spawnService({
      databaseUrl: inject('databaseUrl'),
      waitReady: false,
      env: {
        SERVICE_PLAIN_HTTP: 'false',
        SERVICE_TLS_CERT_FILE: certFile,
        SERVICE_TLS_KEY_FILE: keyFile,
        SERVICE_TLS_CLIENT_CA_FILE: pki.caFile,
      },
    });
    const first = pki.server.cert;
    const { X509Certificate } = await import('node:crypto');
    const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
    expect(await until(async () => (await servedCertificate(child!.port)) === fingerprint(first))).toBe(true);

    const renewed = await pki.issue('renewed-server', {
      commonName: 'portico-resource-service',
      usage: 'server',
    });
    copyFileSync(renewed.certFile, certFile);
    copyFileSync(renewed.keyFile, keyFile);
    child.child.kill('SIGHUP');
    expect(
      await until(async () => (await servedCertificate(child!.port)) === fingerprint(renewed.cert)),
    ).toBe(true);
    expect(child.child.exitCode).toBeNull();
  });

  it('refuses incomplete or contradicting TLS variables, naming them', () => {
    const problems = (env: NodeJS.ProcessEnv) => {
      try {
        readServiceConfig(env);
      } catch (error) {
        if (error instanceof ServiceConfigError) return error.message;
        throw error;
      }
      return '';
    };
    expect(problems({ SERVICE_TLS_CERT_FILE: '/a.crt' })).toContain('SERVICE_TLS_KEY_FILE');
    expect(problems({ SERVICE_TLS_CLIENT_CA_FILE: '/ca.crt' })).toContain('SERVICE_TLS_CERT_FILE');
    expect(problems({ SERVICE_PLAIN_HTTP: 'true', SERVICE_TLS_CERT_FILE: '/a.crt' })).toContain(
      'SERVICE_PLAIN_HTTP',
    );
    expect(problems({ SERVICE_PLAIN_HTTP: 'yes' })).toContain('SERVICE_PLAIN_HTTP');
    expect(readServiceConfig({}).transport).toEqual({ kind: 'dev-pki' });
    expect(readServiceConfig({ SERVICE_PLAIN_HTTP: 'true' }).transport).toEqual({ kind: 'plain-http' });
  });

  it('refuses files that do not load before opening anything, naming the variables', async () => {
    // An address nothing listens on: the refusal must come before any connection attempt.
    const started = runService(
      {
        SERVICE_PORT: '0',
        PORTICO_ASSERTION_KEYS: `k:${Buffer.alloc(32, 1).toString('base64')}`,
        SERVICE_TLS_CERT_FILE: pki.server.certFile,
        // Another certificate's key: the pair does not match.
        SERVICE_TLS_KEY_FILE: pki.client.keyFile,
        SERVICE_TLS_CLIENT_CA_FILE: pki.caFile,
      },
      pino({ level: 'silent' }),
      { url: 'postgres://postgres@127.0.0.1:9/none' },
    );
    await expect(started).rejects.toBeInstanceOf(ServiceConfigError);
    await expect(started).rejects.toThrow('SERVICE_TLS_KEY_FILE');
    const missing = runService(
      {
        SERVICE_PORT: '0',
        SERVICE_TLS_CERT_FILE: '/nonexistent.crt',
        SERVICE_TLS_KEY_FILE: '/nonexistent.key',
      },
      pino({ level: 'silent' }),
      { url: 'postgres://postgres@127.0.0.1:9/none' },
    );
    await expect(missing).rejects.toBeInstanceOf(ServiceConfigError);
  });
});
