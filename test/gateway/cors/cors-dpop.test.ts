/**
 * A browser client of DPoP (RFC 9449) through the CORS stage with its default lists, over real
 * sockets: the preflight must allow the `DPoP` header, and the page must be able to read the
 * `WWW-Authenticate` challenge and the `DPoP-Nonce` of a `use_dpop_nonce` refusal to retry,
 * and the next nonce on a good answer. Each answer is put through the Fetch standard's checks
 * as a browser would: the CORS check, the preflight's header list, what a script may read.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch, type Response } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAssertionKeys } from '../../../shared/assertion-keys.ts';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import { DpopNonces } from '../../../gateway/identity/sender-constraint/dpop-nonce.ts';
import { createDpopKey, dpopProof, type DpopKey } from '../identity/support/dpop-client.ts';
import {
  startRecordingUpstream,
  startTestGateway,
  type RecordingUpstream,
  type TestGateway,
} from '../support/harness.ts';

const APP = 'https://app.example.com';
const PATH = '/v1/orders';
const assertionKeys = parseAssertionKeys(`cors-dpop:${randomBytes(32).toString('base64')}`);

let upstream: RecordingUpstream;
let gw: TestGateway;
let dataDir: string;
let key: DpopKey;
let token: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  dataDir = mkdtempSync(join(tmpdir(), 'portico-cors-dpop-'));
  key = await createDpopKey();
  // The development issuer binds the token to the page's key, as a DPoP-aware IdP does.
  token = await loadOrCreateDevIssuer(dataDir).sign(
    { sub: 'alice', client_id: 'spa', customer_id: 'cus-alice', scope: 'orders:read', cnf: { jkt: key.jkt } },
    300,
  );
  gw = await startTestGateway(
    upstream.url,
    {
      routes: [
        {
          prefix: '/v1',
          upstream: upstream.url,
          auth: 'required',
          cors: { origins: [APP] },
          tokenBinding: { require: 'dpop', dpopNonce: true },
        },
      ],
    },
    { dataDir, assertionKeys },
  );
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The list in a CORS field, lower-cased, as the Fetch standard compares names. */
const listed = (response: Response, field: string) =>
  (response.headers.get(field) ?? '').split(',').map((name) => name.trim().toLowerCase());

/** The Fetch standard's CORS check (4.10), without credentials. */
function passesCorsCheck(response: Response): boolean {
  const allowOrigin = response.headers.get('access-control-allow-origin');
  return allowOrigin === '*' || allowOrigin === APP;
}

/** The CORS-safelisted response-header names (Fetch standard). */
const SAFELISTED = [
  'cache-control',
  'content-language',
  'content-length',
  'content-type',
  'expires',
  'last-modified',
  'pragma',
];

/** A response field as a script of APP sees it: null unless safelisted or exposed. */
function readByScript(response: Response, name: string): string | null {
  if (!passesCorsCheck(response)) throw new Error('a browser would not hand this answer to the page');
  const exposed = listed(response, 'access-control-expose-headers');
  const readable = SAFELISTED.includes(name) || exposed.includes(name) || exposed.includes('*');
  return readable ? response.headers.get(name) : null;
}

/** A fetch() from the page at APP: a DPoP token and a fresh proof, with the nonce when it has one. */
async function pageFetch(nonce?: string): Promise<Response> {
  const proof = await dpopProof(key, {
    htm: 'GET',
    htu: `${gw.origin}${PATH}`,
    accessToken: token,
    ...(nonce === undefined ? {} : { nonce }),
  });
  return fetch(`${gw.origin}${PATH}`, {
    headers: { origin: APP, authorization: `DPoP ${token}`, dpop: proof },
    dispatcher: gw.agent,
  });
}

describe('a browser client of DPoP, with the default CORS lists', () => {
  it('its preflight for Authorization and DPoP is allowed', async () => {
    const response = await fetch(`${gw.origin}${PATH}`, {
      method: 'OPTIONS',
      headers: {
        origin: APP,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization,dpop',
      },
      dispatcher: gw.agent,
    });
    expect(response.status).toBe(204);
    expect(passesCorsCheck(response)).toBe(true);
    // `*` would not cover Authorization (Fetch standard): each is listed by name.
    expect(listed(response, 'access-control-allow-headers')).toEqual(
      expect.arrayContaining(['authorization', 'dpop']),
    );
  });

  it('reads the use_dpop_nonce challenge and its nonce, retries with it, and reads the next one', async () => {
    const first = await pageFetch();
    expect(first.status).toBe(401);
    expect(readByScript(first, 'www-authenticate')).toMatch(/^DPoP .*error="use_dpop_nonce"/);
    const nonce = readByScript(first, 'dpop-nonce');
    expect(nonce).toMatch(/\S{20,}/);
    await first.body?.cancel();

    const retried = await pageFetch(nonce!);
    expect(retried.status).toBe(200);
    expect(passesCorsCheck(retried)).toBe(true);
    await retried.body?.cancel();

    // A nonce from the step before, still good: the answer carries the next, readable.
    const earlier = new DpopNonces(assertionKeys, 300, () => Date.now() - 150_000).current();
    const renewed = await pageFetch(earlier);
    expect(renewed.status).toBe(200);
    const next = readByScript(renewed, 'dpop-nonce');
    expect(next).toMatch(/\S{20,}/);
    expect(next).not.toBe(earlier);
    await renewed.body?.cancel();
  });
});
