/**
 * The built gateway is one file (scripts/build-gateway-bundle.ts): the test bundles it into a
 * directory laid out as `dist/` is and runs it as `npm run gateway` does, with the script's node
 * flags, against a real upstream with a real signed token, so that what only the bundle can get
 * wrong (a file named from a module's own place, a package that cannot be inlined, a module that
 * runs in another order) shows here rather than in a container.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateDevIssuer } from '../../gateway/identity/dev-issuer.ts';
import { bundleGateway, firstNonAsciiCharacter } from '../../scripts/build-gateway-bundle.ts';
import { startGatewayProcess, type GatewayProcess } from '../gateway/support/gateway-process.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../gateway/support/harness.ts';
import { createTestCertificate, type TestCertificate } from '../support/tls.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The node flags of the `gateway` npm script, the command production runs. */
function shippedFlags(): string[] {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  return scripts['gateway']!.split(' ').slice(1, -1);
}

describe('the gateway as the build bundles it', () => {
  let dist: string;
  let dataDir: string;
  let upstream: RecordingUpstream;
  let certificate: TestCertificate;
  let gateway: GatewayProcess | undefined;
  let agent: Agent;

  beforeAll(async () => {
    dist = mkdtempSync(join(tmpdir(), 'portico-bundle-'));
    await bundleGateway(dist);
    // What the build copies beside it, and the packages it still loads from node_modules.
    cpSync(join(ROOT, 'gateway/admin/dashboard'), join(dist, 'gateway/admin/dashboard'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dist, 'node_modules'));
    dataDir = join(dist, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    upstream = await startRecordingUpstream();
    certificate = await createTestCertificate();
    agent = new Agent({ connect: { ca: certificate.cert, servername: 'localhost' } });
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
    await agent?.close();
    await upstream?.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('is one file per entry point, which imports no module of ours', () => {
    for (const entry of ['main.js', 'worker-orphan-watch.js']) {
      const code = readFileSync(join(dist, 'gateway', entry), 'utf8');
      expect(code, entry).not.toMatch(/\bfrom\s*["']\.{1,2}\//);
      expect(code, entry).not.toMatch(/\bimport\(\s*["']\.{1,2}\//);
    }
    // Imported only when a certificate is made: left outside, loaded from node_modules then.
    expect(readFileSync(join(dist, 'gateway/main.js'), 'utf8')).toMatch(/import\(\s*["']selfsigned["']\s*\)/);
  });

  it('is ASCII throughout, so its source is kept at one byte per character', () => {
    for (const entry of ['main.js', 'worker-orphan-watch.js']) {
      const code = readFileSync(join(dist, 'gateway', entry), 'utf8');
      expect(firstNonAsciiCharacter(code), entry).toBeUndefined();
    }
  });
  it('starts with the shipped flags and serves: dashboard, authentication, rate limit, proxy', async () => {
    gateway = await startGatewayProcess(
      {
        listener: { tls: { certFile: certificate.certFile, keyFile: certificate.keyFile } },
        routes: [{ prefix: '/v1', upstream: upstream.url, auth: 'required' }],
        rateLimits: { policies: [{ name: 'per-customer', limit: 2, window: '60s', key: 'customer' }] },
      },
      { PORTICO_DATA_DIR: dataDir },
      shippedFlags(),
      join(dist, 'gateway/main.js'),
    );
    const origin = `https://127.0.0.1:${gateway.port}`;

    // The dashboard's page is read at start from the gateway's directory: it was found.
    const page = await request(`http://127.0.0.1:${gateway.adminPort}/`);
    expect(page.statusCode).toBe(200);
    expect(await page.body.text()).toContain('<html');

    const refused = await request(`${origin}/v1/orders`, { dispatcher: agent });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    await refused.body.text();

    const token = await loadOrCreateDevIssuer(dataDir).sign({ sub: 'dev', customer_id: 'c1' }, 60);
    const authorization = `Bearer ${token}`;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await request(`${origin}/v1/orders`, { dispatcher: agent, headers: { authorization } });
      statuses.push(answer.statusCode);
      await answer.body.text();
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(upstream.records.map((record) => record.url)).toEqual(['/v1/orders', '/v1/orders']);
  });
});
