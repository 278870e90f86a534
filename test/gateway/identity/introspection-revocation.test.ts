/**
 * Revoking an opaque token through the gateway reaches every replica at once: two gateway
 * processes share Redis, both have the token's answer cached for an hour, the identity provider
 * still calls it active, and `npm run -s revoke-token` (a child process, token on stdin) makes
 * both refuse it on the next request. From the attacker's side: the thief keeps the token.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { tokenDigest } from '../../../gateway/identity/introspection/verifier.ts';
import { revokedKey } from '../../../gateway/identity/introspection/revocations.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/harness.ts';
import { startExternalIdp, type ExternalIdp } from './support/external-idp.ts';

const AUDIENCE = 'https://api.portico.test';
const SCRIPT = new URL('../../../scripts/revoke-token.ts', import.meta.url).pathname;

let idp: ExternalIdp;
let upstream: RecordingUpstream;
const replicas: GatewayProcess[] = [];
const prefix = `${inject('redisPrefix')}revocation:`;
const env = {
  REDIS_URL: inject('redisUrl'),
  PORTICO_REDIS_PREFIX: prefix,
  PORTICO_INTROSPECTION_CLIENT_SECRET: 'portico-gateway-secret',
};
// Each gateway serves the self-signed development certificate of its data dir.
const agent = new Agent({ connect: { rejectUnauthorized: false } });

beforeAll(async () => {
  idp = await startExternalIdp();
  upstream = await startRecordingUpstream();
  const config = {
    routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'required' }],
    auth: {
      introspection: {
        endpoint: `${idp.issuer}/token/introspection`,
        issuer: idp.issuer,
        audience: AUDIENCE,
        clientId: 'portico-gateway',
        cacheMaxSeconds: 3600,
      },
    },
  };
  for (let i = 0; i < 2; i += 1) {
    const replica = await startGatewayProcess(config, env);
    replicas.push(replica);
    await replica.waitForLog('gateway listening', 20_000);
  }
}, 60_000);

afterAll(async () => {
  for (const replica of replicas) await replica.stop();
  await upstream?.close();
  await idp?.stop();
  await agent.close();
});

async function status(replica: GatewayProcess, token: string): Promise<number> {
  const response = await request(`https://localhost:${replica.port}/v1/orders`, {
    headers: { authorization: `Bearer ${token}` },
    dispatcher: agent,
  });
  await response.body.dump();
  return response.statusCode;
}

function revokeToken(token: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [SCRIPT], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(`${token}\n`);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('revocation through the gateway, on two replicas', () => {
  it('a token both replicas have cached is refused by both at once; another token still works', async () => {
    const stolen = await idp.token('opaque-a');
    const other = await idp.token('opaque-b');
    for (const replica of replicas) {
      expect(await status(replica, stolen)).toBe(200);
      expect(await status(replica, other)).toBe(200);
    }
    const revoked = await revokeToken(stolen);
    expect(revoked.stderr).toBe('');
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(tokenDigest(stolen));
    expect(revoked.stdout).not.toContain(stolen);
    for (const replica of replicas) {
      expect(await status(replica, stolen)).toBe(401);
      expect(await status(replica, other)).toBe(200);
    }
    // The record outlives the cached answers: a replica asking the provider anew still refuses.
    const redis = new Redis(inject('redisUrl'), { keyPrefix: prefix });
    try {
      expect(await redis.ttl(revokedKey(tokenDigest(stolen)))).toBeGreaterThan(86_000);
      await redis.del(revokedKey(tokenDigest(stolen)));
    } finally {
      redis.disconnect();
    }
  });

  it('refuses a token on stdin that is not one token, and a digest that is not one', async () => {
    expect((await revokeToken('two tokens')).code).toBe(2);
    const child = spawn(process.execPath, [SCRIPT, '--digest', 'short'], {
      env: { PATH: process.env['PATH'] ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
  });
});
