/**
 * The API reference at `/v1/docs`, as a client of `npm start` sees it: through the gateway's
 * default routes (public, like `/v1/openapi.json`) over real HTTPS to the real service, and in
 * a real browser (Debian's Chromium through playwright-core). The page renders every operation
 * of the OpenAPI document, asks nothing of any other host, breaks no rule of its
 * Content-Security-Policy, and its screenshot is a rendered page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultRoutes } from '../../gateway/config/schema/routes.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { startPortico, type Portico } from './support/portico.ts';

let portico: Portico;
let browser: TestBrowser;
let origin: string;

beforeAll(async () => {
  portico = await startPortico({
    // The routes a gateway gets with no config, pointed at this test's service.
    config: (serviceUrl) => {
      const { port } = new URL(serviceUrl);
      return { routes: defaultRoutes({ SERVICE_PORT: port, SERVICE_PLAIN_HTTP: 'true' }) };
    },
  });
  origin = `https://localhost:${portico.gateway.addresses.https.port}`;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await portico?.close();
});

describe('API reference', () => {
  it('is public through the default routes, under a self-only policy, and reads only what it serves', async () => {
    const page = await portico.call('GET', '/v1/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).not.toContain('unsafe');
    expect(page.body).toContain('/v1/docs/swagger-ui-bundle.js');
    const bundle = await portico.call('GET', '/v1/docs/swagger-ui-bundle.js');
    expect([bundle.status, bundle.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);

    const refusals = await Promise.all([
      portico.call('GET', '/v1/docs?x=1'),
      portico.call('POST', '/v1/docs', { body: {} }),
      portico.call('GET', '/v1/docs/swagger-ui.js'),
      portico.call('GET', '/v1/docs/package.json'),
      portico.call('GET', '/v1/docs/'),
    ]);
    expect(refusals.map((r) => [r.status, r.body.code, r.headers['content-type']])).toEqual([
      [400, 'ERR_INVALID_PARAMETER', 'application/problem+json'],
      [405, 'ERR_METHOD_NOT_ALLOWED', 'application/problem+json'],
      [404, 'ERR_ROUTE_NOT_FOUND', 'application/problem+json'],
      [404, 'ERR_ROUTE_NOT_FOUND', 'application/problem+json'],
      [404, 'ERR_ROUTE_NOT_FOUND', 'application/problem+json'],
    ]);
  });

  it('renders every operation of the OpenAPI document in Chromium from this machine only', async () => {
    const spec = (await portico.call('GET', '/v1/openapi.json')).body;
    const operations = Object.entries<Record<string, unknown>>(spec.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => key !== 'parameters')
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations).toEqual(
      expect.arrayContaining(['GET /v1/openapi.json', 'GET /v1/docs', 'POST /v1/orders']),
    );

    const { page, requests, errors } = await browser.open(origin, { ignoreHttpsErrors: true });
    const response = await page.goto(`${origin}/v1/docs`);
    expect(response?.status()).toBe(200);
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('.opblock').count()).toBe(operations.length);
    const rendered = await page.locator('.opblock-summary').evaluateAll((blocks) =>
      blocks.map((block) => {
        const method = block.querySelector('.opblock-summary-method')?.textContent ?? '';
        const path = block.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
        return `${method} ${path}`;
      }),
    );
    expect(rendered.sort()).toEqual([...operations].sort());
    expect(await page.locator('.info .title').innerText()).toContain('Portico resource API');

    const shot = await browser.screenshot(page, 'api-docs');
    expect(shot.bytes).toBeGreaterThan(20_000);
    expect(shot.colours).toBeGreaterThan(20);
    expect(errors).toEqual([]);
    expect(requests).toEqual(expect.arrayContaining([`${origin}/v1/openapi.json`]));
    expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  });
});
