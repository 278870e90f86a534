/**
 * A token bound both ways: its `cnf` names a DPoP key (`jkt`) and a client certificate
 * (`x5t#S256`). Each binding is checked, so the token works only with a proof of its key on a
 * connection that presented its certificate, and the audit record names both. oidc-provider
 * refuses to issue one ("multiple proof-of-possession mechanisms are not allowed"); others
 * may, so the gateway's development issuer mints it here, with real keys and certificates.
 */
import { hash, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import { createTestCertificate, type TestCertificate } from '../../support/tls.ts';
import {
  auditRecordOf,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';
import { createDpopKey, dpopProof, type DpopKey } from './support/dpop-client.ts';

let upstream: RecordingUpstream;
let gateway: TestGateway;
let own: TestCertificate;
let other: TestCertificate;
let key: DpopKey;
let token: string;
let thumbprint: string;
let auditLog: string;
const dirs: string[] = [];
const agents: Agent[] = [];

beforeAll(async () => {
  own = await createTestCertificate('client-own');
  other = await createTestCertificate('client-other');
  upstream = await startRecordingUpstream();
  const dataDir = mkdtempSync(join(tmpdir(), 'portico-bound-both-'));
  dirs.push(own.dir, other.dir, dataDir);
  auditLog = join(dataDir, 'audit.log');
  gateway = await startTestGateway(
    upstream.url,
    {
      routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'required' }],
      listener: { tls: { requestClientCertificates: true } },
    },
    { dataDir, assertionKeys: [{ kid: 'both-test', secret: randomBytes(32) }], auditLogPath: auditLog },
  );
  key = await createDpopKey();
  // RFC 8705 §3.1: the SHA-256 of the certificate's DER encoding, base64url.
  thumbprint = hash('sha256', new X509Certificate(own.cert).raw, 'base64url');
  token = await loadOrCreateDevIssuer(dataDir).sign(
    {
      sub: 'client-both',
      client_id: 'client-both',
      customer_id: 'cust-both',
      scope: 'orders:read',
      cnf: { jkt: key.jkt, 'x5t#S256': thumbprint },
    },
    300,
  );
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  for (const agent of agents) await agent.close();
  await upstream?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** GET /v1/orders presenting `client`'s certificate (or none), with a proof of `key` or as Bearer. */
async function call(client: TestCertificate | undefined, withProof: boolean) {
  const agent = new Agent({
    connect: {
      ca: gateway.certificate.cert,
      servername: 'localhost',
      ...(client === undefined ? {} : { cert: client.cert, key: client.key }),
    },
  });
  agents.push(agent);
  const url = `${gateway.origin}/v1/orders`;
  const headers = withProof
    ? {
        authorization: `DPoP ${token}`,
        dpop: await dpopProof(key, { htm: 'GET', htu: url, accessToken: token }),
      }
    : { authorization: `Bearer ${token}` };
  const response = await request(url, { headers, dispatcher: agent });
  await response.body.dump();
  return { status: response.statusCode, requestId: String(response.headers['x-request-id']) };
}

describe('a token bound to a DPoP key and a client certificate', () => {
  it('is accepted with its proof on a connection with its certificate; the audit names both', async () => {
    const ok = await call(own, true);
    expect(ok.status).toBe(200);
    const record = await auditRecordOf(auditLog, ok.requestId);
    expect(record['auth']).toEqual({
      outcome: 'ok',
      binding: { method: 'dpop+mtls', jkt: key.jkt, 'x5t#S256': thumbprint },
    });
  });

  it('is refused with either binding alone: its proof with another certificate or none, its certificate without a proof', async () => {
    expect((await call(other, true)).status).toBe(401);
    expect((await call(undefined, true)).status).toBe(401);
    expect((await call(own, false)).status).toBe(401);
  });
});
