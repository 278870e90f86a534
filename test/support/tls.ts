/**
 * Certificates made for one test (shared/self-signed.ts), valid for a day.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSelfSigned } from '../../shared/self-signed.ts';

export interface TestCertificate {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
  dir: string;
}

export async function createTestCertificate(
  commonName = 'localhost',
  options: { dir?: string; keyType?: 'ec' | 'rsa' } = {},
): Promise<TestCertificate> {
  const pem = await generateSelfSigned({ commonName, keyType: options.keyType ?? 'ec', validDays: 1 });
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'portico-tls-'));
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  writeFileSync(certFile, pem.cert);
  writeFileSync(keyFile, pem.key, { mode: 0o600 });
  return { cert: pem.cert, key: pem.key, certFile, keyFile, dir };
}
