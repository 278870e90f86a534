/**
 * What the authenticate stage tells the audit log and the upstream, over real sockets with real
 * tokens of a temporary data dir's development issuer: a token's first request is verified, its
 * later ones are taken from the verified-token cache (the stage's synchronous path), and both
 * reach the upstream as a signed identity assertion without the token. Tokens that are not
 * good are refused and audited as such, whatever the cache holds.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import { parseAssertionKeys } from '../../../shared/assertion-keys.ts';
import { IDENTITY_HEADER, verifyAssertion } from '../../../shared/identity-assertion.ts';
import {
  auditRecordOf,
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

let upstream: RecordingUpstream;
let gw: TestGateway;
let dataDir: string;
let auditLogPath: string;
let token: string;
const assertionKeys = parseAssertionKeys(`test:${randomBytes(32).toString('base64')}`);

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  dataDir = mkdtempSync(join(tmpdir(), 'portico-auth-audit-'));
  auditLogPath = join(dataDir, 'audit.log');
  token = await loadOrCreateDevIssuer(dataDir).sign(
    { sub: 'alice', client_id: 'auth-audit', customer_id: 'cus-alice', scope: 'orders:read' },
    300,
  );
  gw = await startTestGateway(
    upstream.url,
    { routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'required' }] },
    { dataDir, assertionKeys, auditLogPath },
  );
});
afterAll(async () => {
  await gw.close();
  await upstream.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The record the gateway wrote for `requestId` (support/harness.ts). */
const auditRecord = (requestId: string) => auditRecordOf(auditLogPath, requestId);

/** Sends GET `path` with `authorization`; the status and the audit record's auth member. */
async function call(path: string, authorization: string): Promise<{ status: number; auth: unknown }> {
  const response = await fetch(`${gw.origin}${path}`, { headers: { authorization }, dispatcher: gw.agent });
  await response.body?.cancel();
  const record = await auditRecord(response.headers.get('x-request-id') ?? '');
  return { status: response.status, auth: record['auth'] };
}

/** The principal the upstream was told for its last request; the token itself never arrives. */
function assertedToUpstream(path: string): unknown {
  const last = upstream.records.at(-1)!;
  expect(last.headers.authorization).toBeUndefined();
  const result = verifyAssertion(assertionKeys, last.headers[IDENTITY_HEADER] as string, {
    method: 'GET',
    target: path,
  });
  return result.ok ? result.principal : result.reason;
}

describe('the authenticate stage, first and later requests of one token', () => {
  it('verifies the first, takes the next from the cache, and asserts the same principal upstream', async () => {
    const principal = {
      subject: 'alice',
      customerId: 'cus-alice',
      scopes: ['orders:read'],
      authMethod: 'jwt',
    };
    expect(await call('/v1/orders', `Bearer ${token}`)).toEqual({
      status: 200,
      auth: { outcome: 'ok', binding: { method: 'none' } },
    });
    expect(assertedToUpstream('/v1/orders')).toEqual(principal);
    expect(await call('/v1/orders/1', `Bearer ${token}`)).toEqual({
      status: 200,
      auth: { outcome: 'ok', reason: 'cached', binding: { method: 'none' } },
    });
    expect(assertedToUpstream('/v1/orders/1')).toEqual(principal);
    // With a query (the full path) and another spelling of the scheme, still from the cache.
    expect(await call('/v1/orders?limit=1', `bearer ${token}`)).toEqual({
      status: 200,
      auth: { outcome: 'ok', reason: 'cached', binding: { method: 'none' } },
    });
    expect(assertedToUpstream('/v1/orders?limit=1')).toEqual(principal);
  });

  it('refuses a credential in the URL beside the cached token, and a changed token, with 4xx audited as refused', async () => {
    await call('/v1/orders', `Bearer ${token}`);
    const before = upstream.records.length;
    const inUrl = await call('/v1/orders?access_token=x', `Bearer ${token}`);
    expect(inUrl).toEqual({ status: 400, auth: { outcome: 'refused', reason: 'credential in URL' } });
    // One signature character changed, mid-way: different signature bytes, never verified. (Not
    // the last one: its low bits are padding, and a token differing only there decodes the same.)
    const at = token.lastIndexOf('.') + 20;
    const forged = `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
    const refused = await call('/v1/orders', `Bearer ${forged}`);
    expect(refused.status).toBe(401);
    expect(refused.auth).toMatchObject({ outcome: 'refused' });
    expect(upstream.records.length).toBe(before);
  });
});
