/**
 * Secrets in the data dir from the attacker's side: another local user who can write the data
 * dir (mode 0777) plants a signing key and an admin token of their own, or reads ours. A secret
 * that is not ours alone, or a directory others may write, is refused with one line naming the
 * file and the fix; what `npm start` creates itself passes.
 */
import { chmodSync, chownSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../../gateway/identity/authenticate.ts';
import { loadApiKeySigningKeys } from '../../../gateway/identity/api-key-signing-keys.ts';
import { loadOrCreateDevIssuer } from '../../../gateway/identity/dev-issuer.ts';
import { loadAdminToken } from '../../../gateway/admin/purge-guard.ts';
import { loadAssertionKeys } from '../../../shared/assertion-keys.ts';
import { authConfig, expectPrincipal, memoryLogger, tempDir } from './support/fixtures.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = tempDir('secrets');
  dirs.push(dir);
  return dir;
}

/** An attacker's own ES256 key, as a private JWK file the dev issuer would load. */
function plantedIssuerKey(dir: string, mode: number): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  mkdirSync(join(dir, 'dev-issuer'), { recursive: true, mode: 0o700 });
  const file = join(dir, 'dev-issuer', 'private.jwk.json');
  writeFileSync(file, JSON.stringify({ ...privateKey.export({ format: 'jwk' }), alg: 'ES256', use: 'sig' }));
  chmodSync(file, mode);
  return file;
}

function plantedAdminToken(dir: string, mode: number): string {
  const file = join(dir, 'admin-token');
  writeFileSync(file, `${'a'.repeat(43)}\n`);
  chmodSync(file, mode);
  return file;
}

// Planting a file owned by another user needs chown, which only root may do; CI runs as root,
// so there the case runs, and a developer's unprivileged run skips it saying why.
const isRoot = process.getuid?.() === 0;

describe('secrets planted in the data dir', () => {
  it('a world-writable data dir with a planted issuer key: the gateway will not trust it', () => {
    const dir = dataDir();
    chmodSync(dir, 0o777);
    plantedIssuerKey(dir, 0o644);
    const build = () =>
      createAuthenticator(authConfig(), { dataDir: dir, logger: memoryLogger().logger, env: {} });
    expect(build).toThrow(
      new RegExp(`^${dir} is writable by group or others \\(mode 0777\\); run chmod 700 ${dir}$`),
    );
  });

  it('a group- or world-readable key file is refused, naming the file and chmod 600', () => {
    const dir = dataDir();
    const file = plantedIssuerKey(dir, 0o644);
    expect(() => loadOrCreateDevIssuer(dir)).toThrow(
      new RegExp(
        `^${file} is readable or writable by group or others \\(mode 0644\\); run chmod 600 ${file}$`,
      ),
    );
    chmodSync(file, 0o620);
    expect(() => loadOrCreateDevIssuer(dir)).toThrow(/mode 0620\); run chmod 600/);
  });

  it('an admin token of mode 0644 is refused', () => {
    const dir = dataDir();
    const file = plantedAdminToken(dir, 0o644);
    expect(() => loadAdminToken({}, dir)).toThrow(
      new RegExp(`^${file} .*\\(mode 0644\\); run chmod 600 ${file}$`),
    );
  });

  it('HMAC key rings (assertion, API-key signing) in a group-writable dir or file are refused', () => {
    const dir = dataDir();
    // Created here first: their own modes pass.
    loadAssertionKeys({}, dir);
    loadApiKeySigningKeys({}, dir);
    chmodSync(dir, 0o770);
    expect(() => loadAssertionKeys({}, dir)).toThrow(/mode 0770\); run chmod 700/);
    expect(() => loadApiKeySigningKeys({}, dir)).toThrow(/mode 0770\); run chmod 700/);
  });

  // Root only (chown to another user): see isRoot above; CI runs it.
  it.skipIf(!isRoot)('a secret owned by another user is refused even at mode 0600', () => {
    const dir = dataDir();
    const file = plantedIssuerKey(dir, 0o600);
    chownSync(file, 65534, 65534);
    expect(() => loadOrCreateDevIssuer(dir)).toThrow(
      new RegExp(`^${file} is owned by uid 65534, not by this user \\(uid 0\\); remove it or chown it`),
    );
  });

  it('what a fresh start creates passes: dir 0700, files 0600, and it keeps working', async () => {
    const dir = join(dataDir(), 'fresh');
    const issuer = loadOrCreateDevIssuer(dir);
    loadAdminToken({}, dir);
    loadAssertionKeys({}, dir);
    loadApiKeySigningKeys({}, dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of ['dev-issuer/private.jwk.json', 'dev-issuer/jwks.json', 'admin-token'])
      expect(statSync(join(dir, file)).mode & 0o777, file).toBe(0o600);
    const auth = createAuthenticator(authConfig(), { dataDir: dir, logger: memoryLogger().logger, env: {} });
    try {
      const token = await issuer.sign(
        { sub: 'u1', client_id: 'c', scope: 'orders:read', customer_id: 'cus_1' },
        60,
      );
      expectPrincipal(await auth.authenticate({ authorization: `Bearer ${token}` }, '/v1/orders'));
    } finally {
      auth.close();
    }
  });
});
