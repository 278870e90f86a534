/**
 * Self-signed certificates for development and tests: ECDSA P-256 with SHA-256 (the key the
 * gateway's docs recommend), valid for localhost, 127.0.0.1 and ::1.
 *
 * `selfsigned` is imported only when a certificate is made, so a gateway given its certificate
 * never loads it (nor the certificate libraries it brings).
 */
export interface SelfSignedOptions {
  commonName?: string;
  keyType?: 'ec' | 'rsa';
  validDays?: number;
}

export async function generateSelfSigned(
  options: SelfSignedOptions = {},
): Promise<{ cert: string; key: string }> {
  const { generate } = await import('selfsigned');
  const keyType = options.keyType ?? 'ec';
  const pem = await generate([{ name: 'commonName', value: options.commonName ?? 'localhost' }], {
    keyType,
    ...(keyType === 'rsa' ? { keySize: 2048 } : { curve: 'P-256' as const }),
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + (options.validDays ?? 365) * 24 * 3600 * 1000),
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  return { cert: pem.cert, key: pem.private };
}
