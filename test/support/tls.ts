/**
 * Certificates made for one test: ECDSA P-256, SHA-256, valid for localhost and 127.0.0.1.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

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
  const pem = await generate([{ name: 'commonName', value: commonName }], {
    keyType: options.keyType ?? 'ec',
    ...(options.keyType === 'rsa' ? { keySize: 2048 } : { curve: 'P-256' as const }),
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'portico-tls-'));
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  writeFileSync(certFile, pem.cert);
  writeFileSync(keyFile, pem.private, { mode: 0o600 });
  return { cert: pem.cert, key: pem.private, certFile, keyFile, dir };
}
