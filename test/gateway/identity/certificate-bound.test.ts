/**
 * Certificate-bound access tokens (RFC 8705), end to end and from the attacker's side:
 * oidc-provider in its own process binds a token to the client certificate presented at its
 * TLS token endpoint (`cnf.x5t#S256`); the gateway, asking for client certificates, accepts the
 * token only on a connection that presented that very certificate, over HTTP/1.1 and HTTP/2.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCertificate, type TestCertificate } from '../../support/tls.ts';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';
import { AUDIENCE, certificateBoundToken } from './support/dpop-client.ts';
import { startExternalIdp, type ExternalIdp } from './support/external-idp.ts';

let idp: ExternalIdp;
let upstream: RecordingUpstream;
let gateway: TestGateway;
let clientA: TestCertificate;
let clientB: TestCertificate;
let token: string;
const dirs: string[] = [];
const agents: Agent[] = [];

beforeAll(async () => {
  const idpCert = await createTestCertificate();
  clientA = await createTestCertificate('client-a');
  clientB = await createTestCertificate('client-b');
  dirs.push(idpCert.dir, clientA.dir, clientB.dir);
  idp = await startExternalIdp({ mtls: { certFile: idpCert.certFile, keyFile: idpCert.keyFile } });
  upstream = await startRecordingUpstream();
  const dataDir = mkdtempSync(join(tmpdir(), 'portico-mtls-'));
  dirs.push(dataDir);
  gateway = await startTestGateway(
    upstream.url,
    {
      routes: [
        { prefix: '/v1', upstream: upstream.url, auth: 'required' },
        {
          prefix: '/v1/bound',
          upstream: upstream.url,
          auth: 'required',
          tokenBinding: { require: 'certificate' },
        },
      ],
      auth: { jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUrl: `${idp.issuer}/jwks` } },
      listener: { tls: { requestClientCertificates: true } },
    },
    { dataDir, assertionKeys: [{ kid: 'mtls-test', secret: randomBytes(32) }] },
  );
  ({ token } = await certificateBoundToken(idp, 'client-bound', clientA));
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  for (const agent of agents) await agent.close();
  await upstream?.close();
  await idp?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function call(client: TestCertificate | undefined, h2: boolean, path = '/v1/orders', bearer = token) {
  const agent = new Agent({
    allowH2: h2,
    connect: {
      ca: gateway.certificate.cert,
      servername: 'localhost',
      ...(client === undefined ? {} : { cert: client.cert, key: client.key }),
    },
  });
  agents.push(agent);
  const response = await request(`${gateway.origin}${path}`, {
    headers: { authorization: `Bearer ${bearer}` },
    dispatcher: agent,
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: JSON.parse(text) as Record<string, unknown> };
}

describe('certificate-bound tokens from an outside identity provider', () => {
  for (const h2 of [false, true]) {
    it(`accepts the token with its certificate, refuses it with another or none (${h2 ? 'HTTP/2' : 'HTTP/1.1'})`, async () => {
      const own = await call(clientA, h2);
      expect(own.status).toBe(200);
      const other = await call(clientB, h2);
      expect(other.status).toBe(401);
      expect(String(other.body['detail'])).toContain('another client certificate');
      const none = await call(undefined, h2);
      expect(none.status).toBe(401);
      expect(String(none.body['detail'])).toContain('none was presented');
    });
  }

  it('a route that requires certificate binding refuses an unbound token', async () => {
    const plain = await idp.token('client-plain');
    expect((await call(clientA, false, '/v1/bound/x', plain)).status).toBe(401);
    expect((await call(clientA, false, '/v1/bound/x')).status).toBe(200);
  });
});
