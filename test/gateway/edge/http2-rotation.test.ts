/**
 * maxRequestsPerConnection on HTTP/2 under concurrent load: a client multiplexing requests on
 * one connection goes on to a new one each time the bound is reached, and no request is lost
 * in the switch. undici (which negotiates h2 by default) against the listener in a process of
 * its own (support/listener-process.ts), many rotations in one run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { once } from 'node:events';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCertificate, type TestCertificate } from '../../support/tls.ts';

const MAX_REQUESTS = 10;
const CLIENTS = 3;
const REQUESTS_EACH = 2000;
const LISTENER = new URL('../support/listener-process.ts', import.meta.url).pathname;

let certificate: TestCertificate;
let listener: ChildProcess;
let port: number;

beforeAll(async () => {
  certificate = await createTestCertificate();
  listener = spawn(process.execPath, [LISTENER], {
    env: {
      PATH: process.env['PATH'],
      CERT_FILE: certificate.certFile,
      KEY_FILE: certificate.keyFile,
      LISTENER_CONFIG: JSON.stringify({ limits: { maxRequestsPerConnection: MAX_REQUESTS } }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(listener, 'exit').then(([code]) => {
    throw new Error(`the listener exited (${String(code)})`);
  });
  const [firstLine] = (await Promise.race([once(listener.stdout!, 'data'), exited])) as [Buffer];
  port = Number(String(firstLine).trim());
});
afterAll(() => {
  listener?.kill('SIGKILL');
  if (certificate !== undefined) rmSync(certificate.dir, { recursive: true, force: true });
});

describe('HTTP/2 connections past maxRequestsPerConnection', () => {
  it('every request is answered while the client moves from connection to connection', async () => {
    const agent = new Agent({
      allowH2: true,
      connect: { ca: certificate.cert, servername: 'localhost' },
    });
    let connections = 0;
    agent.on('connect', () => (connections += 1));
    const errors: string[] = [];
    let answered = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let i = 0; i < REQUESTS_EACH; i++) {
          try {
            const response = await request(`https://localhost:${port}/v1/orders`, { dispatcher: agent });
            expect(await response.body.json()).toEqual({ httpVersion: '2.0' });
            answered += 1;
          } catch (error) {
            if (errors.length < 5) errors.push(String(error));
          }
        }
      }),
    );
    await agent.close();
    expect(errors).toEqual([]);
    expect(answered).toBe(CLIENTS * REQUESTS_EACH);
    // The bound was really crossed, again and again.
    expect(connections).toBeGreaterThanOrEqual((CLIENTS * REQUESTS_EACH) / MAX_REQUESTS);
  }, 60_000);
});
