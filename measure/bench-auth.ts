/**
 * CPU cost of the authentication stage per request: `node measure/bench-auth.ts [N]`.
 * Measures authenticate() with process.cpuUsage (user + system) over N calls for an ES256
 * access token uncached (cache off), cached (one token, warm), and a signed API key
 * (in-memory revocation store). Prints CPU-µs per call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseConfig } from '../gateway/config/load.ts';
import { mintApiKey } from '../gateway/identity/api-key.ts';
import { loadApiKeySigningKeys } from '../gateway/identity/api-key-signing-keys.ts';
import { createAuthenticator, type Authenticator } from '../gateway/identity/authenticate.ts';
import type { AuthConfig } from '../gateway/config/schema/identity.ts';
import { loadOrCreateDevIssuer } from '../gateway/identity/dev-issuer.ts';

const N = Number(process.argv[2] ?? 20000);
const dataDir = mkdtempSync(join(tmpdir(), 'portico-bench-'));
const logger = pino({ level: 'silent' });
// The shipped defaults, from the same schema the gateway validates its config with.
const defaults = parseConfig({}, { env: {} }).config.auth;
const jwt = (cacheMaxEntries: number): AuthConfig => ({
  ...defaults,
  jwt: { ...defaults.jwt, cacheMaxEntries },
});

const issuer = loadOrCreateDevIssuer(dataDir);
const token = await issuer.sign(
  { sub: 'bench', client_id: 'bench', customer_id: 'cust-1', scope: 'orders:read orders:write' },
  3600,
);
const env = {};
const [signingKey] = loadApiKeySigningKeys(env, dataDir);
const { key } = mintApiKey(signingKey!, { customerId: 'cust-1', scopes: ['orders:read'] });

async function measure(label: string, auth: Authenticator, authorization: string, expectCacheHit?: boolean) {
  const headers = { authorization };
  for (let i = 0; i < 2000; i += 1) await auth.authenticate(headers, '/v1/orders'); // warm-up (JIT, cache)
  const outcome = await auth.authenticate(headers, '/v1/orders');
  if (!outcome.ok) throw new Error(`${label}: refused (${outcome.reason})`);
  if (expectCacheHit !== undefined && outcome.cacheHit !== expectCacheHit)
    throw new Error(`${label}: cache state`);
  const start = process.cpuUsage();
  for (let i = 0; i < N; i += 1) await auth.authenticate(headers, '/v1/orders');
  const used = process.cpuUsage(start);
  const perCall = (used.user + used.system) / N;
  console.log(`${label.padEnd(34)} ${perCall.toFixed(2).padStart(8)} CPU-µs/request  (N=${N})`);
}

const uncached = createAuthenticator(jwt(0), { dataDir, logger, env });
const cached = createAuthenticator(jwt(10000), { dataDir, logger, env });
console.log(`node ${process.version}, ${N} calls each`);
await measure('JWT ES256, uncached (verify)', uncached, `Bearer ${token}`, false);
await measure('JWT ES256, cached (hash + lookup)', cached, `Bearer ${token}`, true);
await measure('API key (HMAC + memory revocation)', cached, `ApiKey ${key}`);
uncached.close();
cached.close();
rmSync(dataDir, { recursive: true, force: true });
