/**
 * scripts/internal-ca.ts, which deploy/ runs to issue the internal hop's certificates: a CA,
 * a server certificate for the service's host name and the gateway's client certificate, that
 * together make a working mutual-TLS pair; a second run keeps the set it finds.
 */
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;
const run = (...args: string[]) =>
  spawnSync(process.execPath, ['scripts/internal-ca.ts', ...args], { cwd: ROOT, encoding: 'utf8' });

describe('scripts/internal-ca.ts', () => {
  it('issues a CA, the service certificate for its names and the gateway client certificate, once', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'portico-internal-ca-')), 'pki');
    expect(run('--out', out, '--name', 'service').status).toBe(0);
    const read = (name: string) => new X509Certificate(readFileSync(join(out, name)));
    const ca = read('ca.crt');
    const service = read('service.crt');
    const gateway = read('gateway.crt');
    expect(ca.ca).toBe(true);
    expect(service.checkIssued(ca) && service.verify(ca.publicKey)).toBe(true);
    expect(gateway.checkIssued(ca) && gateway.verify(ca.publicKey)).toBe(true);
    expect(service.subjectAltName).toContain('DNS:service');
    expect(service.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(gateway.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);

    const again = run('--out', out);
    expect(again.status).toBe(0);
    expect(read('service.crt').fingerprint256).toBe(service.fingerprint256);

    // Re-issuing from the same CA into another directory (a certificate renewal).
    const renewed = join(out, '..', 'renewed');
    expect(run('--out', renewed, '--ca', out, '--name', 'service').status).toBe(0);
    expect(new X509Certificate(readFileSync(join(renewed, 'service.crt'))).checkIssued(ca)).toBe(true);
    expect(run().status).toBe(2);
  });
});
